package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/internal/scram"
	"github.com/sandboxer/sandboxer/state"
)

// Rotate sets the app role's password to pw (as a SCRAM verifier) and
// ends the role's open sessions, connected as the admin role.
func Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error {
	if c.AdminUser == "" {
		return fmt.Errorf("the record has no admin user to rotate with")
	}
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		return err
	}
	db := c.Database
	if db == "" {
		db = "postgres"
	}
	cfg, err := pgx.ParseConfig("sslmode=disable application_name=sandboxer-rotate")
	if err != nil {
		return fmt.Errorf("postgres connection config: %w", err)
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Database = c.Host, uint16(c.Port), c.AdminUser, db
	cfg.Password = c.AdminPassword.Reveal()
	cfg.TLSConfig = tlsConf
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect as admin: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	verifier, err := scram.Verifier(pw.Reveal())
	if err != nil {
		return err
	}
	role := pgx.Identifier{c.User}.Sanitize()
	// The verifier is not the password: it is what the server stores, and
	// it cannot be turned back into a login.
	if _, err := conn.Exec(ctx, "ALTER ROLE "+role+" PASSWORD '"+verifier+"'"); err != nil {
		return fmt.Errorf("ALTER ROLE %s PASSWORD: %w", role, err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()", c.User); err != nil {
		return fmt.Errorf("end sessions of %s: %w", role, err)
	}
	return nil
}
