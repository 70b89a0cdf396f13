package sandboxertest_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/sandboxertest"
)

const mysqlDatabaseFixture = `
provider "docker" {
  image "mysql" { ref = "sandboxer.local/mysql:11.8" }
  storage = "tmpfs"
}

project "app" {
  services = ["mysql"]
}

sandbox "db" {
  project   = project.app
  on_demand = true
}
`

// openMySQL opens a handed-out mysql:// URL with go-sql-driver.
func openMySQL(t *testing.T, raw string) *sql.DB {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "mysql" {
		t.Fatalf("not a mysql URL (%v)", err)
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.DBName = "tcp", u.Host, u.User.Username(), u.Path[1:]
	cfg.Passwd, _ = u.User.Password()
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// The helper on a mysql block, on the real engine: each test's database
// is a copy of the migration's template under a user of its own, which
// cannot reach the other test's; each is dropped at its test's cleanup.
func TestDatabaseHelperMySQL(t *testing.T) {
	sandboxertest.RequireDocker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(mysqlDatabaseFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		lib, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		defer lib.Close()
		if _, err := lib.Release(context.Background(), "sandbox.db", sandboxer.DatabaseHostKey); err != nil {
			t.Errorf("release the host: %v", err)
		}
	})
	ctx := context.Background()
	schema := []string{`CREATE TABLE notes (id int AUTO_INCREMENT PRIMARY KEY, body text)`, `INSERT INTO notes (body) VALUES ('seeded')`}
	var urls []string
	t.Run("tests", func(t *testing.T) {
		a := sandboxertest.Database(t, "sandbox.db", sandboxertest.With(sandboxertest.Dir(dir)), sandboxertest.Migrations(schema...))
		b := sandboxertest.Database(t, "sandbox.db", sandboxertest.With(sandboxertest.Dir(dir)), sandboxertest.Migrations(schema...))
		if len(a.Services) != 1 || a.Services[0] != "mysql" || a.Env["SANDBOXER_MYSQL_DB"] == "" || a.Env["SANDBOXER_POSTGRES_DB"] != "" {
			t.Fatalf("handed out %v with env names %v", a.Services, len(a.Env))
		}
		urls = []string{a.MySQLURL(), b.MySQLURL()}
		ha, hb := openMySQL(t, urls[0]), openMySQL(t, urls[1])
		for _, h := range []*sql.DB{ha, hb} {
			var body string
			if err := h.QueryRowContext(ctx, `SELECT body FROM notes`).Scan(&body); err != nil || body != "seeded" {
				t.Errorf("migrated data: %q, %v", body, err)
			}
		}
		if _, err := ha.ExecContext(ctx, "DELETE FROM notes"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := hb.QueryRowContext(ctx, "SELECT count(*) FROM notes").Scan(&n); err != nil || n != 1 {
			t.Errorf("b's notes after a's delete: %d, %v", n, err)
		}
		if err := ha.QueryRowContext(ctx, "SELECT count(*) FROM `"+b.Env["SANDBOXER_MYSQL_DB"]+"`.notes").Scan(&n); err == nil {
			t.Error("a's user reads b's database")
		}
	})
	if len(urls) != 2 {
		t.Fatal("no databases were handed out")
	}
	// Reap through the front door: a database past its lease is dropped.
	lib, err := sandboxer.Open(ctx, dir, sandboxer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	d, err := lib.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{SQL: schema, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	rep, err := lib.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := d.Env["SANDBOXER_MYSQL_DB"]
	if dropped := rep.Databases[`sandbox.db["`+sandboxer.DatabaseHostKey+`"]`]; !slices.Contains(dropped, name) {
		t.Errorf("reap dropped %v, not %s", rep.Databases, name)
	}
	if err := openMySQL(t, d.Env["SANDBOXER_MYSQL_URL"]).PingContext(ctx); err == nil {
		t.Error("a reaped database still answers its user")
	}
	for _, u := range urls {
		if err := openMySQL(t, u).PingContext(ctx); err == nil {
			t.Errorf("a database still answers its user after its test's cleanup")
		}
	}
}
