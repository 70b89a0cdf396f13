// Package databases hands out a fresh PostgreSQL database per test, cloned
// from a template inside one shared, kept sandbox, as pgtestdb and
// IntegreSQL do: the template's schema is made once per migration content
// (its hash names the template), and every clone is a file copy of it,
// owned by a role of its own.
//
// Isolation: each database belongs to a new LOGIN role (no SUPERUSER, no
// CREATEROLE, CREATEDB only when asked), CONNECT is revoked from PUBLIC,
// so no other test's role (nor the sandbox's handed-out role) can connect
// to it, and the objects the migrations made are reassigned to the
// database's role. Every database is written into a lease table
// (sbx_databases, in the server's postgres database) with its expiry and
// the host and pid of the process that asked, so Reap can drop those of a
// test process that died.
//
// Clones are also made ahead (pool.go): a ready clone's role cannot log
// in until Take claims it and binds a verifier made for that hand-out; a
// clone is handed out once and never put back. A process that keeps
// asking claims a few ahead (prefetch.go), handed out from memory.
//
// It works over a connection as the server's admin role, whatever runs
// the server (a Docker container, a Kubernetes pod): it is PostgreSQL
// logic, not runtime logic. What it must never do: hand out the admin
// role, put a password in an error, or drop a database it did not make
// (only names in the lease table, made by this package, are dropped).
package databases

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sandboxer/sandboxer/internal/scram"
)

// Migration makes a template's schema. Hash names the content (two
// migrations with one hash share a template); Run executes it on a
// connection to the template database, as the template's own role. SQL
// is the texts when SQL made it (what a service other than PostgreSQL
// can run: the library's Database hands them to MySQL's maker).
type Migration struct {
	Hash string
	Run  func(ctx context.Context, conn *pgx.Conn) error
	SQL  []string
}

// SQL is a migration of SQL texts, run in order in one transaction; its
// hash is over the texts.
func SQL(texts ...string) Migration {
	h := sha256.New()
	for _, t := range texts {
		fmt.Fprintf(h, "%d:%s", len(t), t)
	}
	return Migration{Hash: hex.EncodeToString(h.Sum(nil)), SQL: slices.Clone(texts), Run: func(ctx context.Context, conn *pgx.Conn) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		for i, t := range texts {
			if _, err := tx.Exec(ctx, t); err != nil {
				return fmt.Errorf("migration %d of %d: %w", i+1, len(texts), err)
			}
		}
		return tx.Commit(ctx)
	}}
}

// Server is one PostgreSQL server reached as its admin role.
type Server struct {
	// Admin connects as the server's admin (a superuser) to its
	// "postgres" database; AppHost and AppPort are what clients of the
	// handed-out databases connect to.
	pool  *pgxpool.Pool
	host  string
	port  int
	pools *pools

	tplMu sync.Mutex
	ready map[string]bool // templates seen ready

	prefetch prefetcher
}

// Open connects to the server with the default PoolConfig; adminURL is
// a postgres:// URL of the admin role. The URL is never quoted in an error.
func Open(ctx context.Context, adminURL, host string, port int) (*Server, error) {
	return OpenWith(ctx, adminURL, host, port, PoolConfig{})
}

// OpenWith connects to the server with pc bounding its pool of ready
// databases.
func OpenWith(ctx context.Context, adminURL, host string, port int, pc PoolConfig) (*Server, error) {
	cfg, err := pgxpool.ParseConfig(adminURL)
	if err != nil {
		return nil, errors.New("databases: the admin URL does not parse")
	}
	cfg.ConnConfig.Database = "postgres"
	cfg.MaxConns = 4
	pc = pc.withDefaults()
	fillCfg := cfg.Copy()
	fillCfg.MaxConns = int32(pc.Parallel) + 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("databases: connect as admin: %w", err)
	}
	fill, err := pgxpool.NewWithConfig(ctx, fillCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("databases: connect as admin: %w", err)
	}
	s := &Server{pool: pool, host: host, port: port, pools: newPools(pc, fill)}
	// Made once per host: the take function is made last, with the
	// table's columns, so its presence says the rest is there. A host
	// that does not answer fails here (callers take this as its probe).
	var made bool
	if err := pool.QueryRow(ctx, `SELECT to_regprocedure('sbx_take_v1(text,text,boolean,interval,text,integer)') IS NOT NULL`).Scan(&made); err != nil {
		s.Close()
		return nil, fmt.Errorf("databases: lease table: %w", err)
	}
	if made {
		return s, nil
	}
	// Under a lock: processes opening the same host at once would race
	// on the catalog (CREATE … IF NOT EXISTS is not atomic).
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, q := range []string{`SELECT pg_advisory_xact_lock(hashtext('sbx_databases'))`, leaseTable,
			`ALTER TABLE sbx_databases ADD COLUMN IF NOT EXISTS pooled boolean NOT NULL DEFAULT false`, takeFunction} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		s.Close()
		return nil, fmt.Errorf("databases: lease table: %w", err)
	}
	return s, nil
}

// Close stops the background filling (a clone under way is finished,
// not thrown away) and closes the admin connections. Ready databases
// stay for other processes (Reap drops them after an hour).
func (s *Server) Close() {
	s.pools.stop()
	s.closePrefetch()
	s.pools.close()
	s.pool.Close()
}

const leaseTable = `CREATE TABLE IF NOT EXISTS sbx_databases (
	name       text PRIMARY KEY,
	role       text NOT NULL,
	template   text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	expires_at timestamptz NOT NULL,
	host       text NOT NULL,
	pid        integer NOT NULL
)`

// Options shape one database.
type Options struct {
	// CreateDB lets the database's role create databases (some frameworks
	// make a shadow database).
	CreateDB bool
	// TTL is the lease: Reap drops the database once it passed, even if
	// its process still runs. Default one hour, at least one second.
	TTL time.Duration
	// Remote marks a database asked for by a process elsewhere (through
	// the HTTP API): its lease ends by TTL only, never because the
	// process that created it on this machine (the server) is gone.
	Remote bool
	// ExactLease: the lease is the caller's when Take returns, also for
	// a database claimed ahead (whose lease is otherwise rewritten just
	// after): for a count of the databases held that must see it at once
	// (a tenant's quota). It costs that hand-out a round trip.
	ExactLease bool
}

// Database is one handed-out database.
type Database struct {
	Name, Role, Password string
	Host                 string
	Port                 int
	Template             string
}

// URL is the database's connection URL (it holds the password).
func (d *Database) URL() string {
	return (&pgxURL{user: d.Role, password: d.Password, host: d.Host, port: d.Port, db: d.Name}).String()
}

// Create clones a database from the migration's template, making the
// template first if no process has yet.
func (s *Server) Create(ctx context.Context, m Migration, o Options) (*Database, error) {
	tpl, o, err := s.prepare(ctx, m, o)
	if err != nil {
		return nil, err
	}
	id := randomHex(8)
	d := &Database{Name: "sbxt_" + id, Role: "sbxt_" + id, Password: randomHex(16), Host: s.host, Port: s.port, Template: tpl}
	host, _ := os.Hostname()
	pid := os.Getpid()
	if o.Remote {
		host, pid = "remote", 0
	}
	createDB := "NOCREATEDB"
	if o.CreateDB {
		createDB = "CREATEDB"
	}
	// The lease first: a process killed after it leaves a row Reap finds.
	if _, err := s.pool.Exec(ctx, `INSERT INTO sbx_databases (name, role, template, expires_at, host, pid) VALUES ($1, $1, $2, now() + $3::interval, $4, $5)`,
		d.Name, tpl, fmt.Sprintf("%d seconds", int(o.TTL.Seconds())), host, pid); err != nil {
		return nil, fmt.Errorf("databases: lease: %w", err)
	}
	// The verifier, not the password: a failing statement is echoed into
	// the server's log.
	verifier, err := scram.Verifier(d.Password)
	if err != nil {
		return nil, fmt.Errorf("databases: %w", err)
	}
	steps := []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s' NOSUPERUSER NOCREATEROLE %s NOREPLICATION NOBYPASSRLS`, ident(d.Role), verifier, createDB),
		fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s OWNER %s STRATEGY FILE_COPY`, ident(d.Name), ident(tpl), ident(d.Role)),
		fmt.Sprintf(`REVOKE CONNECT, TEMPORARY ON DATABASE %s FROM PUBLIC`, ident(d.Name)),
	}
	for _, q := range steps {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			s.drop(context.WithoutCancel(ctx), d.Name)
			return nil, fmt.Errorf("databases: create %s: %s", d.Name, scrub(err, d.Password))
		}
	}
	// The migration's objects belong to the template's role; the clone's
	// become its own role's.
	if err := s.inDatabase(ctx, d.Name, fmt.Sprintf(`REASSIGN OWNED BY %s TO %s`, ident(templateRole(tpl)), ident(d.Role))); err != nil {
		s.drop(context.WithoutCancel(ctx), d.Name)
		return nil, fmt.Errorf("databases: create %s: hand its objects to its role: %w", d.Name, err)
	}
	return d, nil
}

// Drop removes a database this package made, with its role; one already
// gone counts as dropped.
func (s *Server) Drop(ctx context.Context, name string) error {
	var known bool
	if err := s.pool.QueryRow(ctx, `SELECT true FROM sbx_databases WHERE name = $1`, name).Scan(&known); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("databases: drop %s: %w", name, err)
	}
	return s.drop(ctx, name)
}

func (s *Server) drop(ctx context.Context, name string) error {
	// A backend of a process killed mid-clone can still be finishing its
	// CREATE DATABASE (it cannot be cancelled) when reap lists what the
	// role owns: the database appears after the list, and DROP ROLE then
	// refuses (2BP01). The drop is whole again, a few times, until the
	// stray backend is done.
	for attempt := 1; ; attempt++ {
		err := s.dropOnce(ctx, name)
		var pe *pgconn.PgError
		if err == nil || attempt == 5 || !errors.As(err, &pe) || pe.Code != "2BP01" {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Server) dropOnce(ctx context.Context, name string) error {
	// A role with CREATEDB may have made databases of its own (a shadow
	// database); DROP ROLE refuses while it owns any.
	rows, err := s.pool.Query(ctx, `SELECT datname FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE r.rolname = $1`, name)
	if err != nil {
		return fmt.Errorf("databases: drop %s: %w", name, err)
	}
	owned, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("databases: drop %s: %w", name, err)
	}
	if !slices.Contains(owned, name) {
		owned = append(owned, name)
	}
	var qs []string
	for _, db := range owned {
		qs = append(qs, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, ident(db)))
	}
	qs = append(qs, fmt.Sprintf(`DROP ROLE IF EXISTS %s`, ident(name)))
	for _, q := range qs {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("databases: drop %s: %w", name, err)
		}
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM sbx_databases WHERE name = $1`, name); err != nil {
		return fmt.Errorf("databases: drop %s: %w", name, err)
	}
	return nil
}

// Reap drops every database whose lease passed, and those of a process
// on this host that is gone (a test binary killed before its cleanup,
// with what it held and any clone it was making for the pool).
func (s *Server) Reap(ctx context.Context) (dropped []string, err error) {
	host, _ := os.Hostname()
	rows, err := s.pool.Query(ctx, `SELECT name, host, pid, pooled, expires_at < now() FROM sbx_databases`)
	if err != nil {
		return nil, fmt.Errorf("databases: reap: %w", err)
	}
	type lease struct {
		name, host string
		pid        int
		pooled     bool
		expired    bool
	}
	leases, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lease, error) {
		var l lease
		err := r.Scan(&l.name, &l.host, &l.pid, &l.pooled, &l.expired)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("databases: reap: %w", err)
	}
	var errs []error
	for _, l := range leases {
		// A ready (pooled) database outlives the process that made it;
		// one handed out, or one whose clone its maker did not finish,
		// goes with its process.
		mine := l.host == host || l.host == fillHost(host) || l.host == prefetchHost(host)
		if l.expired || (!l.pooled && mine && l.pid > 0 && !processAlive(l.pid)) {
			if err := s.drop(ctx, l.name); err != nil {
				errs = append(errs, err)
				continue
			}
			dropped = append(dropped, l.name)
		}
	}
	return dropped, errors.Join(errs...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ident quotes a name this package made ([a-z0-9_] only).
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func scrub(err error, secret string) string { return strings.ReplaceAll(err.Error(), secret, "***") }

// prepare checks m, makes its template if no process has yet, and
// defaults o's TTL (an hour; at least a second): what Create and Take
// both do first.
func (s *Server) prepare(ctx context.Context, m Migration, o Options) (string, Options, error) {
	if m.Hash == "" || m.Run == nil {
		return "", o, errors.New("databases: a migration needs a hash and a run function")
	}
	tpl, err := s.template(ctx, m)
	if err != nil {
		return "", o, err
	}
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	o.TTL = max(o.TTL, time.Second)
	return tpl, o, nil
}
