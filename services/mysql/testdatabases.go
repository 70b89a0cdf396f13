package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// A database per test, MariaDB's way. MariaDB has no CREATE DATABASE …
// TEMPLATE, so a test database is a copy of the template's tables: the
// template's CREATE TABLE statements (SHOW CREATE TABLE: columns,
// indexes, foreign keys, checks, AUTO_INCREMENT, engine and charset) are
// read once per process and run in the new database, then each table's
// rows are copied with INSERT … SELECT, foreign key checks off. Views,
// triggers, routines and events are not copied: a migration that makes
// any is refused when its template is made, so a copy never silently
// lacks them.
//
// The bookkeeping lives in a database of its own on the server,
// sbx_meta (no test user has a grant on it): templates (made, by name)
// and leases (name, template, expiry, host and pid of the process that
// asked), as PostgreSQL's sbx_databases.

// metaDB holds the lease and template tables.
const metaDB = "sbx_meta"

var metaTables = []string{
	"CREATE DATABASE IF NOT EXISTS " + metaDB,
	`CREATE TABLE IF NOT EXISTS ` + metaDB + `.leases (
		name       varchar(64) PRIMARY KEY,
		template   varchar(64) NOT NULL,
		created_at datetime NOT NULL DEFAULT now(),
		expires_at datetime NOT NULL,
		host       varchar(255) NOT NULL,
		pid        int NOT NULL,
		create_db  bool NOT NULL DEFAULT false
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS ` + metaDB + `.templates (
		name       varchar(64) PRIMARY KEY,
		created_at datetime NOT NULL DEFAULT now()
	) ENGINE=InnoDB`,
}

// OpenDatabases is MySQL's database per test (contract.DatabaseHost),
// over an admin connection to the instance c names.
func (Service) OpenDatabases(ctx context.Context, c state.Credentials) (contract.TestDatabases, error) {
	return OpenTestDatabases(ctx, c)
}

// TestDatabases makes, hands out and reaps the test databases of one
// server, as its admin.
type TestDatabases struct {
	admin *sql.DB
	c     state.Credentials // the admin's: host, port, TLS

	mu     sync.Mutex
	tables map[string][]tableCopy // template → its tables, read once
}

// tableCopy is how one template table is remade: its CREATE statement
// and the columns its rows are copied through (generated ones left out).
type tableCopy struct {
	name, create string
	columns      []string
}

// OpenTestDatabases connects as c's admin and makes the bookkeeping
// tables if no process has. A host that does not answer fails here.
func OpenTestDatabases(ctx context.Context, c state.Credentials) (*TestDatabases, error) {
	if c.AdminUser == "" {
		return nil, errors.New("mysql databases: the instance's record has no admin user")
	}
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		return nil, err
	}
	// Several statements per round trip: a hand-out is one (create). The
	// admin connection runs only this package's SQL; a migration runs
	// over a login of its own (migrate).
	cfg := Config(c.Host, c.Port, c.AdminUser, c.AdminPassword, "", tlsConf)
	cfg.MultiStatements = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql connection config: %w", err)
	}
	admin := sql.OpenDB(connector)
	admin.SetMaxOpenConns(16)
	for _, q := range metaTables {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			admin.Close()
			return nil, fmt.Errorf("mysql databases: lease table: %w", err)
		}
	}
	return &TestDatabases{admin: admin, c: c, tables: map[string][]tableCopy{}}, nil
}

// Close closes the admin connections; the databases stay.
func (t *TestDatabases) Close() { t.admin.Close() }

// Take makes a database from m's template (the template first, if no
// process has) and a user whose only grants are on it.
func (t *TestDatabases) Take(ctx context.Context, m contract.Migration, o contract.DatabaseOptions) (contract.TestDatabase, error) {
	if m.Run != nil && m.SQL == nil {
		return contract.TestDatabase{}, errors.New("mysql databases: a MySQL migration is SQL texts (databases.SQL, sandboxertest.Migrations), not a function")
	}
	if m.Hash == "" {
		return contract.TestDatabase{}, errors.New("mysql databases: a migration needs a hash")
	}
	tpl, err := t.template(ctx, m)
	if err != nil {
		return contract.TestDatabase{}, err
	}
	tables, err := t.templateTables(ctx, tpl)
	if err != nil {
		return contract.TestDatabase{}, err
	}
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	o.TTL = max(o.TTL, time.Second)
	id := randomHex(8)
	d := contract.TestDatabase{Name: "sbxt_" + id, User: "sbxt_" + id, Password: state.Secret(randomHex(16)),
		Host: t.c.Host, Port: t.c.Port}
	host, pid := leaseOwner(o.Remote)
	// The lease first: a process killed after it leaves a row Reap finds.
	if _, err := t.admin.ExecContext(ctx, "INSERT INTO "+metaDB+".leases (name, template, expires_at, host, pid, create_db) VALUES (?, ?, now() + INTERVAL ? SECOND, ?, ?, ?)",
		d.Name, tpl, int(o.TTL.Seconds()), host, pid, o.CreateDB); err != nil {
		return contract.TestDatabase{}, fmt.Errorf("mysql databases: lease: %w", err)
	}
	if err := t.create(ctx, d, tpl, tables, o.CreateDB); err != nil {
		_ = t.drop(context.WithoutCancel(ctx), d.Name)
		return contract.TestDatabase{}, fmt.Errorf("mysql databases: create %s: %w", d.Name, err)
	}
	return d, nil
}

// create makes d's database from the template's tables and its user.
func (t *TestDatabases) create(ctx context.Context, d contract.TestDatabase, tpl string, tables []tableCopy, createDB bool) error {
	conn, err := t.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	steps := []string{
		"CREATE DATABASE " + QuoteIdent(d.Name) + " CHARACTER SET utf8mb4",
		"USE " + QuoteIdent(d.Name),
		"SET SESSION foreign_key_checks = 0",
	}
	for _, tb := range tables {
		steps = append(steps, tb.create)
	}
	for _, tb := range tables {
		cols := strings.Join(tb.columns, ", ")
		steps = append(steps, fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s.%s", QuoteIdent(tb.name), cols, cols, QuoteIdent(tpl), QuoteIdent(tb.name)))
	}
	// The hash, not the password: the server never sees the clear text.
	steps = append(steps, "CREATE USER "+Account(d.User)+" IDENTIFIED VIA mysql_native_password USING "+QuoteString(NativePasswordHash(d.Password.Reveal())))
	if createDB {
		steps = append(steps, Grants(d.User, d.Name)...)
	} else {
		steps = append(steps, fmt.Sprintf("GRANT %s ON %s.* TO %s", AppPrivileges, QuoteIdent(escapePattern(d.Name)), Account(d.User)))
	}
	steps = append(steps, "SET SESSION foreign_key_checks = 1", "USE "+metaDB)
	// One round trip: the statements run in order and the first failing
	// one ends the batch.
	if _, err := conn.ExecContext(ctx, strings.Join(steps, ";\n")); err != nil {
		// The session goes back to the pool: not with the checks off.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION foreign_key_checks = 1; USE "+metaDB)
		return err
	}
	return nil
}

// Drop drops a database Take made, with its user; one not in the lease
// table (gone, or not made here) counts as dropped.
func (t *TestDatabases) Drop(ctx context.Context, name string) error {
	var n int
	if err := t.admin.QueryRowContext(ctx, "SELECT count(*) FROM "+metaDB+".leases WHERE name = ?", name).Scan(&n); err != nil {
		return fmt.Errorf("mysql databases: drop %s: %w", name, err)
	}
	if n == 0 {
		return nil
	}
	return t.drop(ctx, name)
}

// drop removes name's database, the databases its user could make
// (name_*, test_name), its user and its lease.
func (t *TestDatabases) drop(ctx context.Context, name string) error {
	rows, err := t.admin.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ? OR SCHEMA_NAME LIKE ? OR SCHEMA_NAME = ?",
		name, escapePattern(name)+`\_%`, "test_"+name)
	if err != nil {
		return fmt.Errorf("mysql databases: drop %s: %w", name, err)
	}
	var dbs []string
	for rows.Next() {
		var db string
		if err := rows.Scan(&db); err != nil {
			rows.Close()
			return fmt.Errorf("mysql databases: drop %s: %w", name, err)
		}
		dbs = append(dbs, db)
	}
	rows.Close()
	var qs []string
	for _, db := range dbs {
		qs = append(qs, "DROP DATABASE IF EXISTS "+QuoteIdent(db))
	}
	qs = append(qs, "DROP USER IF EXISTS "+Account(name))
	for _, q := range qs {
		if _, err := t.admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("mysql databases: drop %s: %w", name, err)
		}
	}
	if _, err := t.admin.ExecContext(ctx, "DELETE FROM "+metaDB+".leases WHERE name = ?", name); err != nil {
		return fmt.Errorf("mysql databases: drop %s: %w", name, err)
	}
	return nil
}

// Reap drops every database whose lease passed, and those of a process
// on this host that is gone (a test binary killed before its cleanup).
func (t *TestDatabases) Reap(ctx context.Context) ([]string, error) {
	host, _ := os.Hostname()
	rows, err := t.admin.QueryContext(ctx, "SELECT name, host, pid, expires_at < now() FROM "+metaDB+".leases")
	if err != nil {
		return nil, fmt.Errorf("mysql databases: reap: %w", err)
	}
	type lease struct {
		name, host string
		pid        int
		expired    bool
	}
	var leases []lease
	for rows.Next() {
		var l lease
		if err := rows.Scan(&l.name, &l.host, &l.pid, &l.expired); err != nil {
			rows.Close()
			return nil, fmt.Errorf("mysql databases: reap: %w", err)
		}
		leases = append(leases, l)
	}
	rows.Close()
	var dropped []string
	var errs []error
	for _, l := range leases {
		if l.expired || (l.host == host && l.pid > 0 && !processAlive(l.pid)) {
			if err := t.drop(ctx, l.name); err != nil {
				errs = append(errs, err)
				continue
			}
			dropped = append(dropped, l.name)
		}
	}
	return dropped, errors.Join(errs...)
}

// Held is how many databases are within their lease.
func (t *TestDatabases) Held(ctx context.Context) (int, error) {
	var n int
	if err := t.admin.QueryRowContext(ctx, "SELECT count(*) FROM "+metaDB+".leases WHERE expires_at > now()").Scan(&n); err != nil {
		return 0, fmt.Errorf("mysql databases: count the databases handed out: %w", err)
	}
	return n, nil
}

func leaseOwner(remote bool) (string, int) {
	if remote {
		return "remote", 0
	}
	host, _ := os.Hostname()
	return host, os.Getpid()
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// TemplateName is the template database of a migration hash: a hash of
// the hash, so callers' own hashes ("app-v1") may share any prefix.
func TemplateName(hash string) string {
	sum := sha256.Sum256([]byte(hash))
	return "sbxtpl_" + hex.EncodeToString(sum[:8])
}

var _ contract.DatabaseHost = Service{}
