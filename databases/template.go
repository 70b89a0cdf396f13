package databases

import (
	"crypto/sha256"
	"encoding/hex"

	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"syscall"

	"github.com/sandboxer/sandboxer/internal/scram"

	"github.com/jackc/pgx/v5"
)

// MigrationError is a template's migration that failed; nothing of the
// template was kept.
type MigrationError struct{ Err error }

func (e *MigrationError) Error() string {
	return "databases: the template's migration failed, nothing was kept: " + e.Err.Error()
}

func (e *MigrationError) Unwrap() error { return e.Err }

// templateRole owns what a template's migration made.
func templateRole(tpl string) string { return tpl + "_owner" }

// template returns the template database of m, making it (under an
// advisory lock on its hash, so that concurrent first uses from any
// number of processes make it once) when no process has. A migration that
// fails leaves nothing: the half-made template and its role are dropped.
func (s *Server) template(ctx context.Context, m Migration) (string, error) {
	// Named by a hash of the hash: a caller's own hashes ("app-v1",
	// "app-v2") may share any prefix.
	sum := sha256.Sum256([]byte(m.Hash))
	tpl := "sbxtpl_" + hex.EncodeToString(sum[:8])
	// A template this server saw ready stays so (only a failing
	// migration, before it is ready, drops one): no round trip per
	// hand-out.
	s.tplMu.Lock()
	known := s.ready[tpl]
	s.tplMu.Unlock()
	if known {
		return tpl, nil
	}
	if ready, err := s.templateReady(ctx, tpl); err != nil || ready {
		if ready {
			s.markReady(tpl)
		}
		return tpl, err
	}
	// The lock is held on a connection of its own, not one of the pool's:
	// callers waiting for it must not hold the pool's connections, which
	// the holder (and the pool's refills) still need.
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return "", fmt.Errorf("databases: template: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, tpl); err != nil {
		return "", fmt.Errorf("databases: template lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, tpl) }()
	if ready, err := s.templateReady(ctx, tpl); err != nil || ready {
		if ready {
			s.markReady(tpl)
		}
		return tpl, err
	}
	// A template left half-made by a process killed mid-migration.
	s.dropTemplate(context.WithoutCancel(ctx), tpl)
	owner := templateRole(tpl)
	// The migration logs in as the owner itself, with a password used
	// once: run on an admin connection after SET ROLE, its SQL could
	// RESET ROLE and act as the superuser.
	ownerPassword := randomHex(16)
	verifier, err := scram.Verifier(ownerPassword)
	if err != nil {
		return "", fmt.Errorf("databases: %w", err)
	}
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s' NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS`, ident(owner), verifier),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, ident(tpl), ident(owner)),
		fmt.Sprintf(`REVOKE CONNECT, TEMPORARY ON DATABASE %s FROM PUBLIC`, ident(tpl)),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			s.dropTemplate(context.WithoutCancel(ctx), tpl)
			return "", fmt.Errorf("databases: make template %s: %w", tpl, err)
		}
	}
	if err := s.migrate(ctx, tpl, owner, ownerPassword, m); err != nil {
		s.dropTemplate(context.WithoutCancel(ctx), tpl)
		return "", &MigrationError{Err: err}
	}
	// Only now does the template count: a clone never copies a half-made
	// one. Owned by the admin from here on, so that REASSIGN OWNED in a
	// clone never hands the template itself to a test's role.
	for _, q := range []string{
		fmt.Sprintf(`ALTER ROLE %s NOLOGIN PASSWORD NULL`, ident(owner)),
		fmt.Sprintf(`ALTER DATABASE %s OWNER TO CURRENT_USER`, ident(tpl)),
		fmt.Sprintf(`ALTER DATABASE %s WITH ALLOW_CONNECTIONS false IS_TEMPLATE true`, ident(tpl)),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			s.dropTemplate(context.WithoutCancel(ctx), tpl)
			return "", fmt.Errorf("databases: seal template %s: %w", tpl, err)
		}
	}
	s.markReady(tpl)
	return tpl, nil
}

func (s *Server) markReady(tpl string) {
	s.tplMu.Lock()
	defer s.tplMu.Unlock()
	if s.ready == nil {
		s.ready = map[string]bool{}
	}
	s.ready[tpl] = true
}

func (s *Server) templateReady(ctx context.Context, tpl string) (bool, error) {
	var ready bool
	err := s.pool.QueryRow(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, tpl).Scan(&ready)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("databases: look up template: %w", err)
	}
	return ready, nil
}

// migrate runs m in tpl logged in as its owner role (no superuser), so
// what it makes belongs to that role, and nothing it runs can act as the
// admin.
func (s *Server) migrate(ctx context.Context, tpl, owner, password string, m Migration) error {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.Database, cfg.User, cfg.Password = tpl, owner, password
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s as its owner: %s", tpl, scrub(err, password))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return m.Run(ctx, conn)
}

func (s *Server) dropTemplate(ctx context.Context, tpl string) {
	_, _ = s.pool.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s WITH IS_TEMPLATE false`, ident(tpl)))
	_, _ = s.pool.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, ident(tpl)))
	_, _ = s.pool.Exec(ctx, fmt.Sprintf(`DROP ROLE IF EXISTS %s`, ident(templateRole(tpl))))
}

// connectTo opens an admin connection to another database of the server.
func (s *Server) connectTo(ctx context.Context, db string) (*pgx.Conn, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.Database = db
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", db, err)
	}
	return conn, nil
}

// inDatabase runs one statement as the admin in database db.
func (s *Server) inDatabase(ctx context.Context, db, q string) error {
	conn, err := s.connectTo(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, q)
	return err
}

// processAlive reports whether a process of this host runs with pid.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

type pgxURL struct {
	user, password, host, db string
	port                     int
}

func (u *pgxURL) String() string {
	return (&url.URL{Scheme: "postgres", User: url.UserPassword(u.user, u.password),
		Host: net.JoinHostPort(u.host, strconv.Itoa(u.port)), Path: "/" + u.db}).String()
}
