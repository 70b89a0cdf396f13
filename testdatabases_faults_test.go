package sandboxer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/databases"
)

// Faults of the pool on one host: a failing migration leaves no
// template and no pooled database; a session a test left open does not
// survive its drop; the host replaced by a superset gets pools of its
// own, and no hand-out after the replace is of the old host.
func TestPooledDatabaseFaults(t *testing.T) {
	ctx := context.Background()
	sb, dir := openDatabases(t, nil, "")
	schema := databases.SQL(`CREATE TABLE faults (id int PRIMARY KEY)`)
	d1, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
	if err != nil {
		t.Fatalf("Database: %v", err)
	}
	waitReady(t, sb, 2)
	admin := adminConn(t, sb)
	hostAddr := `sandbox.db["` + sandboxer.DatabaseHostKey + `"]`

	t.Run("failing migration", func(t *testing.T) {
		var before int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM sbx_databases`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		_, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{SQL: []string{`CREATE TABLE ok (id int)`, `CREATE TABLE broken (`}})
		var se *sandboxer.Error
		if err == nil || !errors.As(err, &se) || se.Code != sandboxer.CodeInvalid || !strings.Contains(err.Error(), "migration failed") ||
			!strings.Contains(err.Error(), "migration 2 of 2") || !strings.Contains(err.Error(), "syntax error") {
			t.Fatalf("failing migration: %v, want an invalid error naming migration 2 of 2 and its syntax error", err)
		}
		var templates, leases, orphans int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname LIKE 'sbxtpl\_%'`).Scan(&templates); err != nil || templates != 1 {
			t.Errorf("%d templates (%v), want the good migration's only", templates, err)
		}
		// Neither a lease of the failed template nor a clone of it: the
		// rows are the good template's (its refill may have added some).
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM sbx_databases WHERE template NOT IN (SELECT datname FROM pg_database WHERE datistemplate)`).Scan(&leases); err != nil || leases != 0 {
			t.Errorf("%d leases of a template that does not exist (%v)", leases, err)
		}
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname LIKE 'sbxt\_%' AND datname NOT IN (SELECT name FROM sbx_databases)`).Scan(&orphans); err != nil || orphans != 0 {
			t.Errorf("%d test databases without a lease (%v)", orphans, err)
		}
	})

	t.Run("no session survives a drop", func(t *testing.T) {
		c, err := connectURL(ctx, d1.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `INSERT INTO faults VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		if err := sb.DropDatabase(ctx, "sandbox.db", d1.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
			t.Fatalf("drop with a session open: %v", err)
		}
		if _, err := c.Exec(ctx, `SELECT count(*) FROM faults`); err == nil {
			t.Error("a session of a dropped database still answers")
		}
		var sessions int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE usename = $1`, d1.Env["SANDBOXER_POSTGRES_USER"]).Scan(&sessions); err != nil || sessions != 0 {
			t.Errorf("%d sessions of the dropped database's role (%v)", sessions, err)
		}
	})

	t.Run("host replaced by a superset", func(t *testing.T) {
		old, err := sb.Store().Get(ctx, hostAddr)
		if err != nil || old == nil {
			t.Fatalf("host record: %v", err)
		}
		held, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
		if err != nil {
			t.Fatal(err)
		}
		// A request for a feature the host lacks replaces it (new first,
		// old removed).
		if _, err := sb.Request(ctx, "sandbox.db", sandboxer.RequestOptions{Key: sandboxer.DatabaseHostKey,
			Extensions: map[string][]string{"postgres": {"pg_trgm"}}}); err != nil {
			t.Fatalf("replace the host: %v", err)
		}
		cur, err := sb.Store().Get(ctx, hostAddr)
		if err != nil || cur == nil || cur.Generation <= old.Generation {
			t.Fatalf("host after the superset: %+v (%v), want a later generation than %d", cur, err, old.Generation)
		}
		if c, err := connectURL(ctx, held.URL("postgres")); err == nil {
			c.Close(ctx)
			t.Error("a database of the old host still answers after the replace")
		}
		newPort := cur.Credentials["postgres"].Port
		if newPort == old.Credentials["postgres"].Port {
			t.Fatalf("the new host has the old one's port %d", newPort)
		}
		// Eight at once after the replace: every one of the new host, a
		// migrated, empty database its role logs in to.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		got := make(chan *sandboxer.Sandbox, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
				if err != nil {
					errs <- err
					return
				}
				got <- d
			}()
		}
		wg.Wait()
		close(errs)
		close(got)
		for err := range errs {
			t.Fatalf("Database after the replace: %v", err)
		}
		for d := range got {
			if d.Generation != cur.Generation || d.Env["SANDBOXER_POSTGRES_PORT"] != strconv.Itoa(newPort) {
				t.Errorf("handed out of generation %d on port %s, want the new host's %d on %d", d.Generation, d.Env["SANDBOXER_POSTGRES_PORT"], cur.Generation, newPort)
			}
			c, err := connectURL(ctx, d.URL("postgres"))
			if err != nil {
				t.Errorf("log in to %s: %v", d.Env["SANDBOXER_POSTGRES_DB"], err)
				continue
			}
			var rows int
			if err := c.QueryRow(ctx, `SELECT count(*) FROM faults`).Scan(&rows); err != nil || rows != 0 {
				t.Errorf("%s: %d rows (%v), want the migrated, empty table", d.Env["SANDBOXER_POSTGRES_DB"], rows, err)
			}
			c.Close(ctx)
			if err := sb.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
				t.Error(err)
			}
		}
		// The new host's pool fills again (adminConn reads the current
		// record: the new host).
		waitReady(t, sb, 2)
	})

	// A process's first hand-out skips the broker only while the cache
	// rule covers the host: once the block asks for more, a fresh library
	// (a new test process) replaces the host, and the next one uses it.
	t.Run("block asks for more", func(t *testing.T) {
		before, err := sb.Store().Get(ctx, hostAddr)
		if err != nil || before == nil {
			t.Fatalf("host record: %v", err)
		}
		hcl := strings.Replace(databasesFixture, `services = ["postgres"]`, "services = [\"postgres\"]\n  extensions = { postgres = [\"citext\"] }", 1)
		if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(hcl), 0o644); err != nil {
			t.Fatal(err)
		}
		gen := func() int {
			lib, err := sandboxer.Open(ctx, dir, sandboxer.Options{CacheDir: filepath.Join(dir, "cache")})
			if err != nil {
				t.Fatal(err)
			}
			defer lib.Close()
			d, err := lib.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
			if err != nil {
				t.Fatalf("Database in a fresh library: %v", err)
			}
			if err := lib.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
				t.Fatal(err)
			}
			return d.Generation
		}
		grown := gen()
		if grown <= before.Generation {
			t.Fatalf("the block asks for citext, yet a fresh library handed out of generation %d (the host was %d)", grown, before.Generation)
		}
		if again := gen(); again != grown {
			t.Errorf("the next fresh library handed out of generation %d, want the covering host's %d", again, grown)
		}
	})
}
