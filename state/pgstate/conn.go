package pgstate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is a connection pool to one database, shared by the Backend values
// of one process (one per command, or the long-lived one of serve). It
// connects on first use.
type DB struct {
	url   string
	where string
	// secrets are what error messages must never contain.
	secrets []string

	mu   sync.Mutex
	pool *pgxpool.Pool
}

// NewDB returns a pool for the database at url (postgres://…). It does
// not connect; a malformed URL is reported on first use, without it.
func NewDB(url string) *DB {
	db := &DB{url: url, where: describe(url)}
	db.secrets = append(db.secrets, url)
	if cfg, err := pgconn.ParseConfig(url); err == nil && cfg.Password != "" {
		db.secrets = append(db.secrets, cfg.Password)
	}
	return db
}

// describe names the database without its password: PostgreSQL state
// user@host:port/db (search_path when set).
func describe(raw string) string {
	cfg, err := pgconn.ParseConfig(raw)
	if err != nil {
		return "PostgreSQL state (the backend URL does not parse)"
	}
	d := fmt.Sprintf("PostgreSQL state %s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	if sp := cfg.RuntimeParams["search_path"]; sp != "" {
		d += " (schema " + sp + ")"
	}
	return d
}

// Describe names the database without its password.
func (db *DB) Describe() string { return db.where }

// Close closes the pool.
func (db *DB) Close() {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.pool != nil {
		db.pool.Close()
		db.pool = nil
	}
}

func (db *DB) get(ctx context.Context) (*pgxpool.Pool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.pool != nil {
		return db.pool, nil
	}
	cfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		return nil, db.scrub(fmt.Errorf("the backend URL: %w", err))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, db.scrub(err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, db.connectError(err)
	}
	db.pool = pool
	return pool, nil
}

// conn opens a dedicated connection (for session advisory locks).
func (db *DB) conn(ctx context.Context) (*pgx.Conn, error) {
	c, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return nil, db.connectError(err)
	}
	return c, nil
}

func (db *DB) connectError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "28P01" {
		return db.scrub(fmt.Errorf("cannot connect to %s: the password is wrong (check SANDBOXER_BACKEND_URL): %w", db.where, err))
	}
	return db.scrub(fmt.Errorf("cannot connect to %s (check SANDBOXER_BACKEND_URL or --backend, and that the server is up): %w", db.where, err))
}

// scrubbed is an error whose message has the URL and password removed.
// Unwrap keeps the cause for errors.As; its own message is never shown.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

func (db *DB) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range db.secrets {
		if s == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, s, "xxxxx")
		if q := url.QueryEscape(s); q != s {
			msg = strings.ReplaceAll(msg, q, "xxxxx")
		}
		if p := url.PathEscape(s); p != s {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	return &scrubbed{msg: msg, err: err}
}
