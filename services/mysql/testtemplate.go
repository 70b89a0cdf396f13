package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// MigrationError is a template's migration that failed; nothing of the
// template was kept.
type MigrationError struct{ Err error }

func (e *MigrationError) Error() string {
	return "mysql databases: the template's migration failed, nothing was kept: " + e.Err.Error()
}

func (e *MigrationError) Unwrap() error { return e.Err }

// template returns the template database of m, making it when no process
// has: under a named lock (GET_LOCK, the server's, so concurrent first
// uses from any number of processes make it once), as a user of its own
// whose only grants are on the template (a migration is the caller's
// SQL: run as the admin, it could grant itself anything). A migration
// that fails, or that makes what a copy would not carry, leaves nothing.
func (t *TestDatabases) template(ctx context.Context, m contract.Migration) (string, error) {
	tpl := TemplateName(m.Hash)
	t.mu.Lock()
	_, known := t.tables[tpl]
	t.mu.Unlock()
	if known {
		return tpl, nil
	}
	if ready, err := templateReady(ctx, t.admin, tpl); err != nil || ready {
		return tpl, err
	}
	// The lock is a session's: one connection holds it to the end.
	conn, err := t.admin.Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("mysql databases: template: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 300)", tpl).Scan(&got); err != nil || got.Int64 != 1 {
		if err == nil {
			err = fmt.Errorf("timed out")
		}
		return "", fmt.Errorf("mysql databases: template lock: %w", err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", tpl) }()
	// From here on, only the lock's connection: callers waiting for the
	// lock hold the pool's others.
	if ready, err := templateReady(ctx, conn, tpl); err != nil || ready {
		return tpl, err
	}
	owner := tpl + "_m"
	cleanup := func() {
		bg := context.WithoutCancel(ctx)
		_, _ = conn.ExecContext(bg, "DROP DATABASE IF EXISTS "+QuoteIdent(tpl))
		_, _ = conn.ExecContext(bg, "DROP USER IF EXISTS "+Account(owner))
	}
	// A template left half-made by a process killed mid-migration.
	cleanup()
	pw := state.Secret(randomHex(16))
	for _, q := range []string{
		"CREATE DATABASE " + QuoteIdent(tpl) + " CHARACTER SET utf8mb4",
		"CREATE USER " + Account(owner) + " IDENTIFIED VIA mysql_native_password USING " + QuoteString(NativePasswordHash(pw.Reveal())),
		fmt.Sprintf("GRANT %s ON %s.* TO %s", AppPrivileges, QuoteIdent(escapePattern(tpl)), Account(owner)),
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			cleanup()
			return "", fmt.Errorf("mysql databases: template %s: %w", tpl, err)
		}
	}
	if err := t.migrate(ctx, tpl, owner, pw, m.SQL); err != nil {
		cleanup()
		return "", &MigrationError{Err: err}
	}
	if err := t.copyable(ctx, conn, tpl); err != nil {
		cleanup()
		return "", &MigrationError{Err: err}
	}
	if _, err := conn.ExecContext(ctx, "DROP USER "+Account(owner)); err != nil {
		cleanup()
		return "", fmt.Errorf("mysql databases: template %s: %w", tpl, err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO "+metaDB+".templates (name) VALUES (?)", tpl); err != nil {
		cleanup()
		return "", fmt.Errorf("mysql databases: template %s: %w", tpl, err)
	}
	return tpl, nil
}

func templateReady(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, tpl string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+metaDB+".templates WHERE name = ?", tpl).Scan(&n); err != nil {
		return false, fmt.Errorf("mysql databases: template: %w", err)
	}
	return n > 0, nil
}

// migrate runs texts in order in tpl, logged in as owner. A text may
// hold several statements. MariaDB's DDL is not transactional: a failure
// leaves what ran, which the caller drops with the template.
func (t *TestDatabases) migrate(ctx context.Context, tpl, owner string, pw state.Secret, texts []string) error {
	tlsConf, err := t.c.ClientTLS(t.c.Host)
	if err != nil {
		return err
	}
	cfg := Config(t.c.Host, t.c.Port, owner, pw, tpl, tlsConf)
	cfg.MultiStatements = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("log in as the template's user: %w", err)
	}
	defer conn.Close()
	for i, text := range texts {
		if _, err := conn.ExecContext(ctx, text); err != nil {
			return fmt.Errorf("migration %d of %d: %w", i+1, len(texts), err)
		}
	}
	return nil
}

// copyable refuses a template holding what a copy of its tables would
// not carry.
func (t *TestDatabases) copyable(ctx context.Context, conn *sql.Conn, tpl string) error {
	var found []string
	for _, q := range []struct{ what, sql string }{
		{"views, sequences or versioned tables", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE <> 'BASE TABLE'"},
		{"triggers", "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?"},
		{"routines", "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?"},
		{"events", "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?"},
	} {
		names, err := queryStrings(ctx, conn, q.sql, tpl)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			found = append(found, q.what+" ("+strings.Join(names, ", ")+")")
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("it made %s; a MySQL test database is a copy of the template's tables and rows only, so make those in the test", strings.Join(found, ", "))
	}
	return nil
}

// templateTables are the template's tables as a copy remakes them, read
// once per process (a ready template never changes).
func (t *TestDatabases) templateTables(ctx context.Context, tpl string) ([]tableCopy, error) {
	t.mu.Lock()
	tables, ok := t.tables[tpl]
	t.mu.Unlock()
	if ok {
		return tables, nil
	}
	conn, err := t.admin.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	names, err := queryStrings(ctx, conn, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", tpl)
	if err != nil {
		return nil, fmt.Errorf("mysql databases: read template %s: %w", tpl, err)
	}
	for _, name := range names {
		tc := tableCopy{name: name}
		var ignored string
		if err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+QuoteIdent(tpl)+"."+QuoteIdent(name)).Scan(&ignored, &tc.create); err != nil {
			return nil, fmt.Errorf("mysql databases: read template %s: %w", tpl, err)
		}
		cols, err := queryStrings(ctx, conn, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND IS_GENERATED = 'NEVER' ORDER BY ORDINAL_POSITION", tpl, name)
		if err != nil {
			return nil, fmt.Errorf("mysql databases: read template %s: %w", tpl, err)
		}
		for _, c := range cols {
			tc.columns = append(tc.columns, QuoteIdent(c))
		}
		tables = append(tables, tc)
	}
	t.mu.Lock()
	t.tables[tpl] = tables
	t.mu.Unlock()
	return tables, nil
}

func queryStrings(ctx context.Context, conn *sql.Conn, q string, args ...any) ([]string, error) {
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
