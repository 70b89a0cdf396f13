package sandboxer_test

import (
	"context"
	"database/sql"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // pgtestdb's "pgx" driver
	"github.com/peterldowns/pgtestdb"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apiclient"
	"github.com/sandboxer/sandboxer/databases"
	"github.com/sandboxer/sandboxer/internal/server"
	"github.com/sandboxer/sandboxer/sandboxertest"
)

// BenchmarkDatabasePerTest times a database per test beside pgtestdb
// v0.1.1 against the same server (the block's host instance), each with a
// one-table migration whose template is made before the clock starts:
// the hand-out is timed; connect and SELECT 1, drop are not. Sides: the
// library on a long-lived Sandboxer (the pool refilling between
// hand-outs), POST /v1/databases, sandboxertest.Database as a test calls
// it (a library opened per test), sandboxertest.Databases (the handle a
// test binary opens once), pgtestdb and, given
// SANDBOXER_INTEGRESQL_BIN, IntegreSQL. It reports p50 and p99 of each
// and the library's p50 ratio to pgtestdb's. `make bench` runs it.
func BenchmarkDatabasePerTest(b *testing.B) {
	ctx := context.Background()
	sb, dir := openDatabases(nil, b, "")
	schema := databases.SQL(`CREATE TABLE users (id int PRIMARY KEY, name text)`)
	ours := func() time.Duration {
		start := time.Now()
		d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		c, err := connectURL(ctx, d.URL("postgres"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Exec(ctx, `SELECT 1`); err != nil {
			b.Fatal(err)
		}
		c.Close(ctx)
		if err := sb.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
			b.Fatal(err)
		}
		return took
	}
	ours() // the host and the template

	rec, err := sb.Store().Get(ctx, `sandbox.db["`+sandboxer.DatabaseHostKey+`"]`)
	if err != nil || rec == nil {
		b.Fatal(err)
	}
	c := rec.Credentials["postgres"]
	conf := pgtestdb.Config{DriverName: "pgx", Host: c.Host, Port: strconv.Itoa(c.Port), User: c.AdminUser,
		Password: c.AdminPassword.Reveal(), Database: "postgres", Options: "sslmode=disable"}
	migrator := sqlMigrator{`CREATE TABLE users (id int PRIMARY KEY, name text)`}
	theirs := func() time.Duration {
		// pgtestdb drops at its TB's cleanup: one scope per database.
		scope := &cleanups{TB: b}
		start := time.Now()
		db := pgtestdb.New(scope, conf, migrator)
		took := time.Since(start)
		if _, err := db.Exec(`SELECT 1`); err != nil {
			b.Fatal(err)
		}
		scope.run()
		return took
	}
	theirs() // its template

	// Through the HTTP API: the library behind serve's handler, over
	// loopback, with the API client.
	api := apiSide(b, sb)
	viaAPI := func() time.Duration {
		start := time.Now()
		d, err := api.Database(ctx, apiDatabaseBody)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if err := api.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
			b.Fatal(err)
		}
		return took
	}
	viaAPI()

	// sandboxertest.Database as a test calls it: it opens the library
	// (configuration, state, the host's admin connections) for the test
	// and closes it at the test's cleanup, untimed here.
	helper := func() time.Duration {
		scope := &cleanups{TB: b}
		start := time.Now()
		d := sandboxertest.Database(scope, "sandbox.db", sandboxertest.With(sandboxertest.Dir(dir)),
			sandboxertest.Migrations(`CREATE TABLE users (id int PRIMARY KEY, name text)`))
		took := time.Since(start)
		if d.Env["SANDBOXER_POSTGRES_DB"] == "" {
			b.Fatal("sandboxertest.Database handed out no database")
		}
		scope.run()
		return took
	}
	helper()

	// sandboxertest.Databases, the handle a test binary makes once in
	// TestMain: one library for every test.
	dbs, err := sandboxertest.NewDatabases(ctx, "sandbox.db", sandboxertest.With(sandboxertest.Dir(dir)),
		sandboxertest.Migrations(`CREATE TABLE users (id int PRIMARY KEY, name text)`))
	if err != nil {
		b.Fatal(err)
	}
	defer dbs.Close()
	handle := func() time.Duration {
		scope := &cleanups{TB: b}
		start := time.Now()
		d := dbs.Database(scope)
		took := time.Since(start)
		if d.Env["SANDBOXER_POSTGRES_DB"] == "" {
			b.Fatal("sandboxertest.Databases handed out no database")
		}
		scope.run()
		return took
	}
	handle()

	isql := startIntegreSQL(b, c, []string{`CREATE TABLE users (id int PRIMARY KEY, name text)`})
	integre := func() time.Duration {
		start := time.Now()
		d, err := isql.take(ctx)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		conn, err := connectURL(ctx, d.url())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SELECT 1`); err != nil {
			b.Fatal(err)
		}
		conn.Close(ctx)
		if err := isql.done(ctx, d); err != nil {
			b.Fatal(err)
		}
		return took
	}

	var a, t, h, g, x, y []time.Duration
	for b.Loop() {
		a = append(a, ours())
		t = append(t, theirs())
		h = append(h, viaAPI())
		x = append(x, helper())
		y = append(y, handle())
		if isql != nil {
			g = append(g, integre())
		}
	}
	p := func(d []time.Duration, q float64) float64 {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(a, 0.5), "sandboxer-p50-ms")
	b.ReportMetric(p(a, 0.99), "sandboxer-p99-ms")
	b.ReportMetric(p(t, 0.5), "pgtestdb-p50-ms")
	b.ReportMetric(p(t, 0.99), "pgtestdb-p99-ms")
	b.ReportMetric(p(a, 0.5)/p(t, 0.5), "p50-ratio")
	b.ReportMetric(p(h, 0.5), "api-p50-ms")
	b.ReportMetric(p(h, 0.99), "api-p99-ms")
	b.ReportMetric(p(x, 0.5), "sandboxertest-p50-ms")
	b.ReportMetric(p(x, 0.99), "sandboxertest-p99-ms")
	b.ReportMetric(p(y, 0.5), "sandboxertest-handle-p50-ms")
	b.ReportMetric(p(y, 0.99), "sandboxertest-handle-p99-ms")
	if len(g) > 0 {
		b.ReportMetric(p(g, 0.5), "integresql-p50-ms")
		b.ReportMetric(p(g, 0.99), "integresql-p99-ms")
	}
}

var apiDatabaseBody = api.DatabaseBody{Address: "sandbox.db", SQL: []string{`CREATE TABLE users (id int PRIMARY KEY, name text)`}}

// apiSide serves sb's library as `serve` does (internal/server) on a
// loopback port for the benchmark's end, and answers its client.
func apiSide(tb testing.TB, sb *sandboxer.Sandboxer) *apiclient.Client {
	token := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	srv, err := server.New(sb, token, nil, context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	c, err := apiclient.New(hs.URL, token)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// sqlMigrator is a pgtestdb.Migrator of SQL texts.
type sqlMigrator []string

func (m sqlMigrator) Hash() (string, error) { return databases.SQL(m...).Hash, nil }

func (m sqlMigrator) Migrate(ctx context.Context, db *sql.DB, _ pgtestdb.Config) error {
	for _, q := range m {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// cleanups is a pgtestdb.TB whose cleanups run when run is called; it
// keeps pgtestdb's per-database log line out of the figures.
type cleanups struct {
	testing.TB
	fns []func()
}

func (c *cleanups) Logf(string, ...any) {}

func (c *cleanups) Cleanup(f func()) { c.fns = append(c.fns, f) }

func (c *cleanups) run() {
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
	c.fns = nil
}

// BenchmarkDatabaseDensity makes SANDBOXER_DENSITY_N (default 1,000)
// databases in one host, all alive at once, and reports the time per
// database, the host container's memory as `docker stats` shows it, and
// the data directory's size; then drops them all. `make bench` runs it.
func BenchmarkDatabaseDensity(b *testing.B) {
	ctx := context.Background()
	// The data on a volume, not the tests' tmpfs: a thousand databases
	// are gigabytes of files.
	dir := b.TempDir()
	hcl := strings.Replace(databasesFixture, `storage = "tmpfs"`, `storage = "volume"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(hcl), 0o644); err != nil {
		b.Fatal(err)
	}
	sb, _ := openDatabases(nil, b, dir)
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("SANDBOXER_DENSITY_N")); err == nil && v > 0 {
		n = v
	}
	schema := databases.SQL(`CREATE TABLE users (id int PRIMARY KEY, name text)`)
	for b.Loop() {
		var names []string
		start := time.Now()
		for i := range n {
			d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
			if err != nil {
				b.Fatalf("database %d of %d: %v", i+1, n, err)
			}
			names = append(names, d.Env["SANDBOXER_POSTGRES_DB"])
		}
		took := time.Since(start)
		rec, err := sb.Store().Get(ctx, `sandbox.db["`+sandboxer.DatabaseHostKey+`"]`)
		if err != nil || rec == nil {
			b.Fatal(err)
		}
		out, err := exec.Command("docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", rec.Resources.Containers["postgres"]).Output()
		if err != nil {
			b.Fatal(err)
		}
		size, _ := exec.Command("docker", "exec", rec.Resources.Containers["postgres"], "du", "-sh", "/var/lib/postgresql/data").Output()
		b.Logf("%d databases in one host: %.1f ms each; host memory %s; data directory %s", n,
			float64(took.Milliseconds())/float64(n), strings.TrimSpace(string(out)), strings.Fields(string(size) + " ?")[0])
		b.ReportMetric(float64(took.Milliseconds())/float64(n), "ms/database")
		dropStart := time.Now()
		for _, name := range names {
			if err := sb.DropDatabase(ctx, "sandbox.db", name); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(time.Since(dropStart).Milliseconds())/float64(n), "ms/drop")
	}
}

// BenchmarkDatabaseThroughput hands out SANDBOXER_THROUGHPUT_N (default
// 400) databases from SANDBOXER_THROUGHPUT_WORKERS (default 8) workers,
// or as many as they can in SANDBOXER_THROUGHPUT_SECONDS, each connected
// to, queried and dropped, beside pgtestdb v0.1.1 (and IntegreSQL, given
// SANDBOXER_INTEGRESQL_BIN) doing the same against the same server, and
// reports databases per second of each, their ratio, and the CPU the
// host's server used meanwhile (cores). `make bench` runs it; `make
// test`'s benchcheck runs it once at a small size.
func BenchmarkDatabaseThroughput(b *testing.B) {
	ctx := context.Background()
	sb, _ := openDatabases(nil, b, "")
	schema := databases.SQL(`CREATE TABLE users (id int PRIMARY KEY, name text)`)
	n, workers := envInt("SANDBOXER_THROUGHPUT_N", 400), envInt("SANDBOXER_THROUGHPUT_WORKERS", 8)
	dur := time.Duration(envInt("SANDBOXER_THROUGHPUT_SECONDS", 0)) * time.Second
	d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema}) // the host and the template
	if err != nil {
		b.Fatal(err)
	}
	_ = sb.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"])
	rec, err := sb.Store().Get(ctx, `sandbox.db["`+sandboxer.DatabaseHostKey+`"]`)
	if err != nil || rec == nil {
		b.Fatal(err)
	}
	c := rec.Credentials["postgres"]
	ctr := rec.Resources.Containers["postgres"]
	conf := pgtestdb.Config{DriverName: "pgx", Host: c.Host, Port: strconv.Itoa(c.Port), User: c.AdminUser,
		Password: c.AdminPassword.Reveal(), Database: "postgres", Options: "sslmode=disable"}
	migrator := sqlMigrator{`CREATE TABLE users (id int PRIMARY KEY, name text)`}
	pgtestdbOne := func(ctx context.Context) error {
		scope := &cleanups{TB: b}
		db := pgtestdb.New(scope, conf, migrator)
		_, err := db.Exec(`SELECT 1`)
		scope.run()
		return err
	}
	isql := startIntegreSQL(b, c, migrator)
	integreOne := func(ctx context.Context) error {
		d, err := isql.take(ctx)
		if err != nil {
			return err
		}
		conn, err := connectURL(ctx, d.url())
		if err == nil {
			_, err = conn.Exec(ctx, `SELECT 1`)
			conn.Close(ctx)
		}
		if err == nil {
			err = isql.done(ctx, d)
		}
		return err
	}
	measure := func(name string, one func(context.Context) error) float64 {
		cpu0, wall0 := containerCPU(b, ctr), time.Now()
		rate, err := runThroughput(ctx, workers, n, dur, one)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		cores := (containerCPU(b, ctr) - cpu0).Seconds() / time.Since(wall0).Seconds()
		b.ReportMetric(rate, name+"-db/s")
		b.ReportMetric(cores, name+"-server-cores")
		return rate
	}
	for b.Loop() {
		ours := measure("sandboxer", freshDatabase(sb, schema))
		theirs := measure("pgtestdb", pgtestdbOne)
		b.ReportMetric(ours/theirs, "throughput-ratio")
		if isql != nil {
			// IntegreSQL v1.1.0 sometimes hands out a database it is
			// still recreating (it does not exist yet): counted, not fatal.
			var failed atomic.Int64
			measure("integresql", func(ctx context.Context) error {
				if err := integreOne(ctx); err != nil {
					if failed.Add(1) == 1 {
						b.Logf("IntegreSQL: %v", err)
					}
					return errNotCounted
				}
				return nil
			})
			b.ReportMetric(float64(failed.Load()), "integresql-failed")
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// containerCPU is the CPU time the container used so far, from its
// cgroup: usage_usec of cpu.stat (cgroup v2), else cpuacct.usage (v1).
func containerCPU(tb testing.TB, ctr string) time.Duration {
	out, err := exec.Command("docker", "exec", ctr, "sh", "-c",
		`cat /sys/fs/cgroup/cpu.stat 2>/dev/null || echo "usage_ns $(cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null || cat /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage)"`).Output()
	if err != nil {
		tb.Fatalf("the CPU use of %s: %v", ctr, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		for prefix, unit := range map[string]time.Duration{"usage_usec ": time.Microsecond, "usage_ns ": time.Nanosecond} {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					tb.Fatalf("the CPU use of %s: %q", ctr, line)
				}
				return time.Duration(n) * unit
			}
		}
	}
	tb.Fatalf("the CPU use of %s: no usage in %q", ctr, out)
	return 0
}
