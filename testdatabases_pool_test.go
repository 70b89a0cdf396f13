package sandboxer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/databases"
)

// waitReady waits until the host holds at least n ready (pooled)
// databases, whose roles cannot log in.
func waitReady(t *testing.T, sb *sandboxer.Sandboxer, n int) {
	t.Helper()
	admin := adminConn(t, sb)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var ready int
		var anyLogin bool
		if err := admin.QueryRow(context.Background(), `SELECT count(*), coalesce(bool_or(r.rolcanlogin OR r.rolpassword IS NOT NULL), false)
			FROM sbx_databases d JOIN pg_authid r ON r.rolname = d.role WHERE d.pooled`).Scan(&ready, &anyLogin); err != nil {
			t.Fatalf("count ready databases: %v", err)
		}
		if anyLogin {
			t.Fatal("a ready database's role can log in (or has a password) before it was handed out")
		}
		if ready >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ready databases after 2 minutes, want %d", ready, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Hand-outs from the pool, concurrently: never one database or role
// twice; each role reaches its own database only; a dropped database's
// role cannot log in again; a dirtied database is never handed out again.
func TestPooledDatabases(t *testing.T) {
	ctx := context.Background()
	sb, _ := openDatabases(t, nil, "")
	schema := databases.SQL(`CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL)`)
	first, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema}) // the host, the template, a miss
	if err != nil {
		t.Fatalf("Database: %v", err)
	}
	waitReady(t, sb, 4)

	const workers, each = 8, 3
	var mu sync.Mutex
	var got []*sandboxer.Sandbox
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Database: %v", err)
	}
	got = append(got, first)
	dbs, roles := map[string]bool{}, map[string]bool{}
	for _, d := range got {
		db, role := d.Env["SANDBOXER_POSTGRES_DB"], d.Env["SANDBOXER_POSTGRES_USER"]
		if dbs[db] || roles[role] {
			t.Fatalf("database %s or role %s handed out twice", db, role)
		}
		dbs[db], roles[role] = true, true
	}

	// Each role logs in to its own database, finds it empty, dirties it;
	// it cannot reach its neighbour's.
	for i, d := range got {
		c, err := connectURL(ctx, d.URL("postgres"))
		if err != nil {
			t.Fatalf("connect to hand-out %d: %v", i, err)
		}
		var rows int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&rows); err != nil || rows != 0 {
			t.Errorf("hand-out %d: %d rows (%v), want an empty migrated table", i, rows, err)
		}
		if _, err := c.Exec(ctx, `INSERT INTO users VALUES (1, 'dirty')`); err != nil {
			t.Errorf("hand-out %d: insert: %v", i, err)
		}
		c.Close(ctx)
		other := got[(i+1)%len(got)].Env["SANDBOXER_POSTGRES_DB"]
		if c, err := connectTo(ctx, d.URL("postgres"), other); err == nil {
			c.Close(ctx)
			t.Errorf("hand-out %d's role reached %s", i, other)
		}
	}

	// Dropped: the role cannot log in again, the name never comes back.
	for _, d := range got {
		if err := sb.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
			t.Fatalf("DropDatabase: %v", err)
		}
	}
	if c, err := connectURL(ctx, got[0].URL("postgres")); err == nil {
		c.Close(ctx)
		t.Error("a role handed out earlier logged in after its database was dropped")
	} else if strings.Contains(err.Error(), got[0].Env["SANDBOXER_POSTGRES_PASSWORD"]) {
		t.Error("the login error quotes the password")
	}
	waitReady(t, sb, 1)
	again, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
	if err != nil {
		t.Fatalf("Database after drops: %v", err)
	}
	defer func() { _ = sb.DropDatabase(ctx, "sandbox.db", again.Env["SANDBOXER_POSTGRES_DB"]) }()
	if dbs[again.Env["SANDBOXER_POSTGRES_DB"]] || roles[again.Env["SANDBOXER_POSTGRES_USER"]] {
		t.Fatal("a dropped database or role was handed out again")
	}

	// Every front takes from the pool: the library (above), and POST
	// /v1/databases (serve's handler over loopback): a ready database is
	// handed out, not a clone made for the call.
	t.Run("api", func(t *testing.T) {
		waitReady(t, sb, 2)
		ready := readyNames(t, sb)
		c := apiSide(t, sb)
		d, err := c.Database(ctx, api.DatabaseBody{Address: "sandbox.db", SQL: []string{`CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL)`}})
		if err != nil {
			t.Fatalf("POST /v1/databases: %v", err)
		}
		name := d.Env["SANDBOXER_POSTGRES_DB"]
		if !ready[name] {
			t.Errorf("the API handed out %s, not one of the ready %v", name, ready)
		}
		conn, err := connectURL(ctx, d.Env["SANDBOXER_POSTGRES_URL"])
		if err != nil {
			t.Fatalf("log in to the API's database: %v", err)
		}
		conn.Close(ctx)
		// Its lease is the API's (ended by its TTL only), also when it
		// was claimed ahead: rewritten after the hand-out.
		admin := adminConn(t, sb)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var host string
			var pid int
			if err := admin.QueryRow(ctx, `SELECT host, pid FROM sbx_databases WHERE name = $1`, name).Scan(&host, &pid); err != nil {
				t.Fatal(err)
			}
			if host == "remote" && pid == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the API's database's lease is host %q pid %d, want remote, 0", host, pid)
			}
		}
		if err := c.DropDatabase(ctx, "sandbox.db", name); err != nil {
			t.Fatal(err)
		}
		if conn, err := connectURL(ctx, d.Env["SANDBOXER_POSTGRES_URL"]); err == nil {
			conn.Close(ctx)
			t.Error("the API's database role logged in after its drop")
		}
	})

	t.Run("throughput", func(t *testing.T) {
		rate, err := databaseThroughput(ctx, sb, schema, 8, 40)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("8 workers, 40 databases: %.0f databases/s (hand-out, connect, SELECT 1, drop)", rate)
	})

	t.Run("bound", func(t *testing.T) {
		admin := adminConn(t, sb)
		var held int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM sbx_databases`).Scan(&held); err != nil {
			t.Fatal(err)
		}
		rec, err := sb.Store().Get(ctx, `sandbox.db["`+sandboxer.DatabaseHostKey+`"]`)
		if err != nil || rec == nil {
			t.Fatalf("host record: %v", err)
		}
		c := rec.Credentials["postgres"]
		c.User, c.Password = c.AdminUser, c.AdminPassword
		srv, err := databases.OpenWith(ctx, c.URL("postgres"), c.Host, c.Port, databases.PoolConfig{Bound: held, BoundWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		// A template of its own: nothing ready, the host at its bound.
		start := time.Now()
		d, err := srv.Take(ctx, databases.SQL(`CREATE TABLE bound_test (id int)`), databases.Options{})
		if err == nil {
			_ = srv.Drop(ctx, d.Name)
			t.Fatal("Take past the bound succeeded")
		}
		var be *databases.BoundError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), fmt.Sprint(held)) {
			t.Fatalf("Take past the bound: %v, want a BoundError naming %d", err, held)
		}
		if took := time.Since(start); took < time.Second || took > 30*time.Second {
			t.Errorf("Take past the bound gave up after %s, want after its 1s wait", took)
		}
	})
}

// readyNames are the host's databases made ahead and never handed out:
// ready in the pool, or claimed ahead by a process that keeps asking.
func readyNames(t *testing.T, sb *sandboxer.Sandboxer) map[string]bool {
	t.Helper()
	rows, err := adminConn(t, sb).Query(context.Background(), `SELECT name FROM sbx_databases WHERE pooled OR host LIKE 'prefetch@%'`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// databaseThroughput hands out n databases from workers goroutines
// (each connects, runs SELECT 1, drops it) and answers databases per
// second.
func databaseThroughput(ctx context.Context, sb *sandboxer.Sandboxer, m databases.Migration, workers, n int) (float64, error) {
	return runThroughput(ctx, workers, n, 0, freshDatabase(sb, m))
}

// freshDatabase is one test's database: handed out, connected to,
// queried, dropped.
func freshDatabase(sb *sandboxer.Sandboxer, m databases.Migration) func(context.Context) error {
	return func(ctx context.Context) error {
		d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: m})
		if err != nil {
			return err
		}
		c, err := connectURL(ctx, d.URL("postgres"))
		if err == nil {
			_, err = c.Exec(ctx, `SELECT 1`)
			c.Close(ctx)
		}
		if err == nil {
			err = sb.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"])
		}
		return err
	}
}

// errNotCounted is a failure one reports to runThroughput that it counts
// neither as done nor as the end of the run.
var errNotCounted = errors.New("not counted")

// runThroughput runs one from workers goroutines, n times in all, or
// (dur > 0) for dur, and answers how many a second were done.
func runThroughput(ctx context.Context, workers, n int, dur time.Duration, one func(context.Context) error) (float64, error) {
	var mu sync.Mutex
	done := 0
	var firstErr error
	deadline := time.Now().Add(dur)
	next := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil {
			return false
		}
		if dur > 0 {
			return time.Now().Before(deadline)
		}
		if n <= 0 {
			return false
		}
		n--
		return true
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next() {
				err := one(ctx)
				mu.Lock()
				switch {
				case err == nil:
					done++
				case errors.Is(err, errNotCounted):
				case firstErr == nil:
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(done) / time.Since(start).Seconds(), nil
}
