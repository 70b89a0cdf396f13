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
