package sandboxer_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/databases"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

const databasesFixture = `
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

// openDatabases opens dir (made with the fixture when ""), removing what
// its state made when the test ends.
func openDatabases(t *testing.T, tb testing.TB, dir string) (*sandboxer.Sandboxer, string) {
	if t != nil {
		tb = t
	}
	tb.Helper()
	testenv.RequireDocker(tb)
	if dir == "" {
		dir = tb.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(databasesFixture), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{CacheDir: filepath.Join(dir, "cache"), ReadyTimeout: 4 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close() })
	removeLineage(tb, sb)
	return sb, dir
}

func removeLineage(t testing.TB, sb *sandboxer.Sandboxer) {
	t.Cleanup(func() {
		snap, err := sb.Store().Snapshot(context.Background())
		if err != nil || snap.Lineage == "" {
			return
		}
		filter := "label=dev.sandboxer.lineage=" + snap.Lineage
		for _, kind := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
			out, _ := exec.Command("docker", append(kind, "--filter", filter)...).Output()
			if ids := strings.Fields(string(out)); len(ids) > 0 {
				rm := []string{"rm", "-f", "-v"}
				if kind[0] != "ps" {
					rm = []string{kind[0], "rm"}
				}
				_ = exec.Command("docker", append(rm, ids...)...).Run()
			}
		}
	})
}

func connectURL(ctx context.Context, url string) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }

// connectTo connects with url's role and password to another database.
func connectTo(ctx context.Context, url, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.Database = db
	return pgx.ConnectConfig(ctx, cfg)
}

func TestDatabasePerTest(t *testing.T) {
	ctx := context.Background()
	sb, _ := openDatabases(t, nil, "")
	schema := databases.SQL(`CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL)`)

	a, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
	if err != nil {
		t.Fatalf("Database: %v", err)
	}
	b, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
	if err != nil {
		t.Fatalf("second Database: %v", err)
	}
	if a.Env["SANDBOXER_POSTGRES_DB"] == b.Env["SANDBOXER_POSTGRES_DB"] || a.Env["SANDBOXER_POSTGRES_USER"] == b.Env["SANDBOXER_POSTGRES_USER"] {
		t.Fatalf("two tests got one database or role: %s/%s", a.Env["SANDBOXER_POSTGRES_DB"], b.Env["SANDBOXER_POSTGRES_DB"])
	}

	// a's role has the migrated schema and owns it.
	ca, err := connectURL(ctx, a.URL("postgres"))
	if err != nil {
		t.Fatalf("connect to a's database: %v", err)
	}
	if _, err := ca.Exec(ctx, `INSERT INTO users VALUES (1, 'ada')`); err != nil {
		t.Errorf("insert into the migrated table: %v", err)
	}
	var owner string
	if err := ca.QueryRow(ctx, `SELECT tableowner FROM pg_tables WHERE tablename = 'users'`).Scan(&owner); err != nil || owner != a.Env["SANDBOXER_POSTGRES_USER"] {
		t.Errorf("users is owned by %q (%v), want the database's own role %s", owner, err, a.Env["SANDBOXER_POSTGRES_USER"])
	}
	var super, createdb bool
	if err := ca.QueryRow(ctx, `SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = current_user`).Scan(&super, &createdb); err != nil || super || createdb {
		t.Errorf("a's role: superuser %v, createdb %v (%v); want neither", super, createdb, err)
	}
	ca.Close(ctx)

	// Neither a's role nor the host's handed-out role reaches b's database.
	if c, err := connectTo(ctx, a.URL("postgres"), b.Env["SANDBOXER_POSTGRES_DB"]); err == nil {
		c.Close(ctx)
		t.Error("a's role connected to b's database")
	} else if !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("a's role into b's database: %v, want permission denied", err)
	}
	host, err := sb.Request(ctx, "sandbox.db", sandboxer.RequestOptions{Key: sandboxer.DatabaseHostKey})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := connectTo(ctx, host.URL("postgres"), b.Env["SANDBOXER_POSTGRES_DB"]); err == nil {
		c.Close(ctx)
		t.Error("the host's handed-out role connected to a test's database")
	}

	// Dropped: gone, with its role.
	if err := sb.DropDatabase(ctx, "sandbox.db", a.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
		t.Fatal(err)
	}
	if c, err := connectURL(ctx, a.URL("postgres")); err == nil {
		c.Close(ctx)
		t.Error("a's database still answers after its drop")
	}
	if err := sb.DropDatabase(ctx, "sandbox.db", a.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
		t.Errorf("a second drop: %v", err)
	}

	// A migration that fails: a clear error, and no template or role left.
	_, err = sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: databases.SQL(`CREATE TABLE broken (`)})
	if err == nil || !strings.Contains(err.Error(), "migration failed") || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("failing migration: %v, want the migration's error", err)
	}
	admin := adminConn(t, sb)
	var templates, owners int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname LIKE 'sbxtpl_%'`).Scan(&templates); err != nil || templates != 1 {
		t.Errorf("%d templates (%v), want only the good migration's", templates, err)
	}
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_roles WHERE rolname LIKE 'sbxtpl_%'`).Scan(&owners); err != nil || owners != 1 {
		t.Errorf("%d template roles (%v), want 1", owners, err)
	}

	// A migration runs as the template's own role: it cannot get back to
	// the admin (RESET ROLE changes nothing) nor grant itself more.
	_, err = sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: databases.SQL(`RESET ROLE`, `ALTER ROLE CURRENT_USER SUPERUSER`)})
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("a migration escalating itself: %v, want permission denied", err)
	}
	var supers int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_roles WHERE rolsuper AND rolname LIKE 'sbxt%'`).Scan(&supers); err != nil || supers != 0 {
		t.Errorf("%d sandboxer-made superusers (%v), want 0", supers, err)
	}

	// CREATEDB when asked: a database the role makes itself goes with it.
	c, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema, CreateDB: true})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := connectURL(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	shadow := c.Env["SANDBOXER_POSTGRES_DB"] + "_shadow"
	if _, err := cc.Exec(ctx, `CREATE DATABASE `+shadow); err != nil {
		t.Fatalf("CREATE DATABASE with CreateDB: %v", err)
	}
	cc.Close(ctx)
	if err := sb.DropDatabase(ctx, "sandbox.db", c.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
		t.Fatalf("drop a database whose role made another: %v", err)
	}
	var left int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname IN ($1, $2)`, c.Env["SANDBOXER_POSTGRES_DB"], shadow).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d of the database and its shadow left (%v)", left, err)
	}

	// Eight at once with a new migration: one template, eight databases.
	fresh := databases.SQL(`CREATE TABLE items (id int)`, `INSERT INTO items VALUES (1), (2)`)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: fresh})
			if err != nil {
				errs <- err
				return
			}
			c, err := connectURL(ctx, d.URL("postgres"))
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(ctx)
			var n int
			if err := c.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&n); err != nil || n != 2 {
				errs <- fmt.Errorf("items in a concurrent clone: %d, %v", n, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname LIKE 'sbxtpl_%'`).Scan(&templates); err != nil || templates != 2 {
		t.Errorf("%d templates after concurrent first use, want 2", templates)
	}
}

// adminConn connects as the host's admin, for the test's own checks.
func adminConn(t *testing.T, sb *sandboxer.Sandboxer) *pgx.Conn {
	t.Helper()
	rec, err := sb.Store().Get(context.Background(), `sandbox.db["`+sandboxer.DatabaseHostKey+`"]`)
	if err != nil || rec == nil {
		t.Fatalf("host record: %v", err)
	}
	c := rec.Credentials["postgres"]
	c.User, c.Password, c.Database = c.AdminUser, c.AdminPassword, "postgres"
	conn, err := pgx.Connect(context.Background(), c.URL("postgres"))
	if err != nil {
		t.Fatalf("admin connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// A test process killed before its cleanup leaves its database; reap
// drops it, as its process is gone.
func TestDatabaseOfKilledTestIsReaped(t *testing.T) {
	if dir := os.Getenv("SBX_DATABASE_CHILD_DIR"); dir != "" {
		databaseChild(t, dir)
		return
	}
	ctx := context.Background()
	sb, dir := openDatabases(t, nil, "")
	// The host exists before the child runs, so both use one.
	if _, err := sb.Request(ctx, "sandbox.db", sandboxer.RequestOptions{Key: sandboxer.DatabaseHostKey}); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestDatabaseOfKilledTestIsReaped$", "-test.v")
	child.Env = append(os.Environ(), "SBX_DATABASE_CHILD_DIR="+dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var name string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "DATABASE "); ok {
			name = n
			break
		}
	}
	if name == "" {
		_ = child.Process.Kill()
		t.Fatal("the child made no database")
	}
	_ = child.Process.Kill() // no cleanup runs
	_ = child.Wait()

	admin := adminConn(t, sb)
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil || !exists {
		t.Fatalf("the killed child's database %s: exists %v (%v)", name, exists, err)
	}
	// Through the CLI's reap, as a janitor would run it.
	reapOut, err := exec.Command("go", "run", "./cmd/sandboxer", "--chdir", dir, "reap").CombinedOutput()
	if err != nil {
		t.Fatalf("sandboxer reap: %v\n%s", err, reapOut)
	}
	if !strings.Contains(string(reapOut), name) {
		t.Errorf("reap said nothing of %s:\n%s", name, reapOut)
	}
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) OR EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, name).Scan(&exists); err != nil || exists {
		t.Errorf("after reap, %s's database or role exists: %v (%v)", name, exists, err)
	}
}

// databaseChild makes a database, says its name, and waits to be killed.
func databaseChild(t *testing.T, dir string) {
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sb.Database(context.Background(), "sandbox.db", sandboxer.DatabaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("DATABASE %s\n", d.Env["SANDBOXER_POSTGRES_DB"])
	time.Sleep(time.Minute)
}
