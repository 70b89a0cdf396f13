package postgres

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sandboxer/sandboxer/state"
)

// Connect opens one connection. The password is set on the parsed config,
// never written into a connection string that an error could echo.
//
// tlsConf nil means a plain connection (sslmode=disable); otherwise the
// connection is TLS, verified as tlsConf says.
func Connect(ctx context.Context, host string, port int, user string, password state.Secret, db string, tlsConf *tls.Config) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable application_name=sandboxer",
		host, port, quoteConnValue(user), quoteConnValue(db)))
	if err != nil {
		return nil, fmt.Errorf("postgres connection config: %w", err)
	}
	cfg.Password = password.Reveal()
	cfg.TLSConfig = tlsConf
	return pgx.ConnectConfig(ctx, cfg)
}

// Ready is Create's readiness probe: log in as the app role to its
// database and run SELECT 1. The connection stays open for the checks that
// follow.
func Ready(ctx context.Context, c state.Credentials, tlsConf *tls.Config) (*pgx.Conn, error) {
	conn, err := Connect(ctx, c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
	if err != nil {
		return nil, err
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("SELECT 1: %w", err)
	}
	return conn, nil
}

// Ping is the liveness probe: log in and run SELECT 1.
func Ping(ctx context.Context, host string, port int, user string, password state.Secret, db string, tlsConf *tls.Config) error {
	conn, err := Connect(ctx, host, port, user, password, db, tlsConf)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("SELECT 1: %w", err)
	}
	return nil
}

// QuoteLiteral quotes a SQL string literal (standard_conforming_strings on).
func QuoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// quoteConnValue quotes a keyword/value connection string value.
func quoteConnValue(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
