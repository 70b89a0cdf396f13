package databases

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// templateRole owns what a template's migration made.
func templateRole(tpl string) string { return tpl + "_owner" }

// template returns the template database of m, making it (under an
// advisory lock on its hash, so that concurrent first uses from any
// number of processes make it once) when no process has. A migration that
// fails leaves nothing: the half-made template and its role are dropped.
func (s *Server) template(ctx context.Context, m Migration) (string, error) {
	tpl := "sbxtpl_" + m.Hash[:min(16, len(m.Hash))]
	if ready, err := s.templateReady(ctx, tpl); err != nil || ready {
		return tpl, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return "", fmt.Errorf("databases: template: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, tpl); err != nil {
		return "", fmt.Errorf("databases: template lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, tpl) }()
	if ready, err := s.templateReady(ctx, tpl); err != nil || ready {
		return tpl, err
	}
	// A template left half-made by a process killed mid-migration.
	s.dropTemplate(context.WithoutCancel(ctx), tpl)
	owner := templateRole(tpl)
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s NOLOGIN`, ident(owner)),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, ident(tpl), ident(owner)),
		fmt.Sprintf(`REVOKE CONNECT, TEMPORARY ON DATABASE %s FROM PUBLIC`, ident(tpl)),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			s.dropTemplate(context.WithoutCancel(ctx), tpl)
			return "", fmt.Errorf("databases: make template %s: %w", tpl, err)
		}
	}
	if err := s.migrate(ctx, tpl, owner, m); err != nil {
		s.dropTemplate(context.WithoutCancel(ctx), tpl)
		return "", fmt.Errorf("databases: the template's migration failed, nothing was kept: %w", err)
	}
	// Only now does the template count: a clone never copies a half-made
	// one. Owned by the admin from here on, so that REASSIGN OWNED in a
	// clone never hands the template itself to a test's role.
	for _, q := range []string{
		fmt.Sprintf(`ALTER DATABASE %s OWNER TO CURRENT_USER`, ident(tpl)),
		fmt.Sprintf(`ALTER DATABASE %s WITH ALLOW_CONNECTIONS false IS_TEMPLATE true`, ident(tpl)),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			s.dropTemplate(context.WithoutCancel(ctx), tpl)
			return "", fmt.Errorf("databases: seal template %s: %w", tpl, err)
		}
	}
	return tpl, nil
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

// migrate runs m in tpl as its owner role, so what it makes belongs to
// that role and not to the admin.
func (s *Server) migrate(ctx context.Context, tpl, owner string, m Migration) error {
	conn, err := s.connectTo(ctx, tpl)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, fmt.Sprintf(`SET ROLE %s`, ident(owner))); err != nil {
		return err
	}
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
