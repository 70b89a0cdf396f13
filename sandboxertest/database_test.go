package sandboxertest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/sandboxertest"
)

const databaseFixture = `
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  storage = "tmpfs"
}

project "app" {
  services = ["postgres"]
}

sandbox "db" {
  project   = project.app
  on_demand = true
}
`

// The helper on the real engine: a migrated database per test, dropped at
// its cleanup; the host stays for the next test.
func TestDatabaseHelper(t *testing.T) {
	sandboxertest.RequireDocker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(databaseFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The kept host instance of this test's own state.
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
	var url, name string
	t.Run("test", func(t *testing.T) {
		db := sandboxertest.Database(t, "sandbox.db", sandboxertest.With(sandboxertest.Dir(dir)),
			sandboxertest.Migrations(`CREATE TABLE notes (body text)`, `INSERT INTO notes VALUES ('seeded')`))
		url, name = db.PostgresURL(), db.Env["SANDBOXER_POSTGRES_DB"]
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var body string
		if err := c.QueryRow(ctx, `SELECT body FROM notes`).Scan(&body); err != nil || body != "seeded" {
			t.Errorf("migrated data: %q, %v", body, err)
		}
	})
	if name == "" {
		t.Fatal("no database was handed out")
	}
	if c, err := pgx.Connect(ctx, url); err == nil {
		c.Close(ctx)
		t.Errorf("database %s still answers after its test's cleanup", name)
	}

	// The next test's database comes from the host's pool of ready ones
	// (the first test's hand-out started the refill).
	lib, err := sandboxer.Open(ctx, dir, sandboxer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	rec, err := lib.Store().Get(ctx, `sandbox.db["`+sandboxer.DatabaseHostKey+`"]`)
	if err != nil || rec == nil {
		t.Fatalf("the host's record: %v", err)
	}
	admin := rec.Credentials["postgres"]
	admin.User, admin.Password, admin.Database = admin.AdminUser, admin.AdminPassword, "postgres"
	ac, err := pgx.Connect(ctx, admin.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close(ctx)
	ready := map[string]bool{}
	for deadline := time.Now().Add(2 * time.Minute); len(ready) == 0; time.Sleep(50 * time.Millisecond) {
		rows, err := ac.Query(ctx, `SELECT name FROM sbx_databases WHERE pooled`)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			ready[n] = true
		}
		if time.Now().After(deadline) {
			t.Fatal("no ready database in the host after 2 minutes")
		}
	}
	t.Run("next test", func(t *testing.T) {
		db := sandboxertest.Database(t, "sandbox.db", sandboxertest.With(sandboxertest.Dir(dir)),
			sandboxertest.Migrations(`CREATE TABLE notes (body text)`, `INSERT INTO notes VALUES ('seeded')`))
		if n := db.Env["SANDBOXER_POSTGRES_DB"]; !ready[n] {
			t.Errorf("handed out %s, not one of the ready %v", n, ready)
		}
	})
}

// The handle of a test binary: eight parallel tests each get a database of
// their own through one library, no two the same database or role, none
// reachable with another's role, each dropped at its test's cleanup.
func TestDatabasesHandle(t *testing.T) {
	sandboxertest.RequireDocker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(databaseFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dbs, err := sandboxertest.NewDatabases(ctx, "sandbox.db", sandboxertest.With(sandboxertest.Dir(dir)),
		sandboxertest.Migrations(`CREATE TABLE notes (body text)`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dbs.Close()
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
	const n = 8
	got := make([]*sandboxertest.Sandbox, n)
	t.Run("tests", func(t *testing.T) {
		for i := range n {
			t.Run("", func(t *testing.T) {
				t.Parallel()
				db := dbs.Database(t)
				got[i] = db
				c, err := pgx.Connect(ctx, db.PostgresURL())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close(ctx)
				if _, err := c.Exec(ctx, `INSERT INTO notes VALUES ('mine')`); err != nil {
					t.Error(err)
				}
				// Hold it until every test has its own, so the pool
				// cannot hand one out twice in sequence either.
				time.Sleep(200 * time.Millisecond)
			})
		}
	})
	names, roles := map[string]bool{}, map[string]bool{}
	for i, db := range got {
		if db == nil {
			t.Fatalf("test %d got no database", i)
		}
		name, role := db.Env["SANDBOXER_POSTGRES_DB"], db.User("postgres")
		if names[name] || roles[role] {
			t.Errorf("database %s or role %s handed out twice", name, role)
		}
		names[name], roles[role] = true, true
		if c, err := pgx.Connect(ctx, db.PostgresURL()); err == nil {
			c.Close(ctx)
			t.Errorf("database %s still answers after its test's cleanup", name)
		}
	}
	// Another test's role on a live database: refused.
	a := dbs.Database(t)
	b := dbs.Database(t)
	cfg, err := pgx.ParseConfig(a.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = b.Env["SANDBOXER_POSTGRES_DB"]
	if c, err := pgx.ConnectConfig(ctx, cfg); err == nil {
		c.Close(ctx)
		t.Error("one test's role reaches another test's database")
	}
}
