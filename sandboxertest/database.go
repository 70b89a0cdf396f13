package sandboxertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/databases"
)

// DatabaseOption adjusts a Database.
type DatabaseOption func(*dbSettings)

type dbSettings struct {
	settings
	opts sandboxer.DatabaseOptions
}

// With applies Request's options that make sense for a database (Dir,
// StatePath, API, Prefix, Timeout, Provider).
func With(o Option) DatabaseOption { return func(s *dbSettings) { o(&s.settings) } }

// Migrations are the SQL texts that make the template's schema, run in
// order once per content: every test with the same texts gets a clone of
// one template.
func Migrations(sql ...string) DatabaseOption {
	return func(s *dbSettings) { s.opts.SQL = append(s.opts.SQL, sql...) }
}

// MigrationFunc makes the template with a Go function (library mode
// only); hash names its content, as pgtestdb's migrators do: change it
// when the schema changes.
func MigrationFunc(hash string, run func(ctx context.Context, conn *pgx.Conn) error) DatabaseOption {
	return func(s *dbSettings) { s.opts.Migration = databases.Migration{Hash: hash, Run: run} }
}

// CreateDB lets the database's role create databases.
func CreateDB() DatabaseOption { return func(s *dbSettings) { s.opts.CreateDB = true } }

// Database hands the test a fresh database of its own, made from the
// migrations' template inside the kept host instance of the on-demand
// block at address (sandbox.NAME), and drops it at t.Cleanup: a
// PostgreSQL clone (dropped WITH (FORCE)) when the block runs postgres,
// else a MySQL copy of the template's tables and rows when it runs mysql
// (docs/functions.md). The result has Request's accessors: PostgresURL()
// or MySQLURL(), Env, Setenv. The database's user cannot reach any other
// test's database.
func Database(tb testing.TB, address string, opts ...DatabaseOption) *Sandbox {
	tb.Helper()
	dbs, err := NewDatabases(context.Background(), address, opts...)
	if err != nil {
		tb.Fatalf("sandboxertest: %v", err)
	}
	// Registered first, run last: after the database's drop.
	tb.Cleanup(dbs.Close)
	return dbs.Database(tb)
}

func envName(prefix, service, suffix string) string {
	if prefix == "" {
		prefix = "SANDBOXER_"
	}
	return prefix + strings.ToUpper(service) + "_" + suffix
}

// Databases hands out test databases of one on-demand block for a whole
// test binary: the library (or the API client) is opened once, by
// NewDatabases, so a hand-out is one round trip to the host, or none when
// the library has claimed databases ahead (databases package), instead of
// opening the configuration, the state and two admin logins per test as
// Database does. Make it in TestMain and Close it there; Database is safe
// for parallel tests.
type Databases struct {
	b       backend
	address string
	base    dbSettings
}

// NewDatabases opens what Databases hands out through: the library on the
// configuration directory (Dir, default the nearest with *.sbx.hcl) or
// the API (API, SANDBOXER_API_URL). opts are every hand-out's defaults;
// Database's own options add to them.
func NewDatabases(ctx context.Context, address string, opts ...DatabaseOption) (*Databases, error) {
	s := dbSettings{settings: envSettings()}
	for _, o := range opts {
		o(&s)
	}
	s.opts.Prefix = s.prefix
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	return &Databases{b: b, address: address, base: s}, nil
}

// Database hands the test a fresh database, as the function Database
// does, and drops it (with its role) at t.Cleanup.
func (d *Databases) Database(tb testing.TB, opts ...DatabaseOption) *Sandbox {
	tb.Helper()
	s := d.base
	s.opts.SQL = append([]string(nil), d.base.opts.SQL...)
	for _, o := range opts {
		o(&s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	res, err := d.b.database(ctx, d.address, s.opts)
	if err != nil {
		tb.Fatalf("sandboxertest: database in %s: %v", d.address, err)
	}
	// The database's service is the one the result carries (postgres,
	// mysql: whichever the block's instances host databases with).
	svc := "postgres"
	if len(res.Services) == 1 {
		svc = res.Services[0]
	}
	name := res.Env[envName(s.prefix, svc, "DB")]
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := d.b.dropDatabase(ctx, d.address, name); err != nil {
			tb.Errorf("sandboxertest: drop database %s: %v", name, err)
		}
	})
	return &Sandbox{Sandbox: res}
}

// Close closes the library or client; databases still held by tests are
// dropped at their own cleanups, which must run before.
func (d *Databases) Close() { d.b.close() }
