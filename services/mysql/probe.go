package mysql

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/sandboxer/sandboxer/state"
)

// Config is the driver's configuration for one login. The password is
// set on the struct, never written into a DSN an error could echo.
// LOAD DATA LOCAL INFILE stays off on the client side too
// (AllowAllFiles false, no registered readers).
//
// tlsConf nil means a plain connection; otherwise TLS, verified as
// tlsConf says.
func Config(host string, port int, user string, password state.Secret, db string, tlsConf *tls.Config) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	cfg.User = user
	cfg.Passwd = password.Reveal()
	cfg.DBName = db
	cfg.Timeout = 2 * time.Second
	cfg.ReadTimeout = 30 * time.Second
	cfg.WriteTimeout = 30 * time.Second
	cfg.TLS = tlsConf
	cfg.ParseTime = true
	cfg.Logger = quiet{}
	return cfg
}

// quiet drops the driver's own log lines ("unexpected EOF" while a
// server starts): the errors it returns say the same to the caller, and
// a probe must not print.
type quiet struct{}

func (quiet) Print(...any) {}

// Open returns a handle for one login (database/sql pools it).
func Open(host string, port int, user string, password state.Secret, db string, tlsConf *tls.Config) (*sql.DB, error) {
	conn, err := mysql.NewConnector(Config(host, port, user, password, db, tlsConf))
	if err != nil {
		return nil, fmt.Errorf("mysql connection config: %w", err)
	}
	return sql.OpenDB(conn), nil
}

// Ping is the readiness and liveness probe: log in as user to db and run
// SELECT 1.
func Ping(ctx context.Context, host string, port int, user string, password state.Secret, db string, tlsConf *tls.Config) error {
	h, err := Open(host, port, user, password, db, tlsConf)
	if err != nil {
		return err
	}
	defer h.Close()
	var one int
	if err := h.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("login as %s + SELECT 1: %w", user, err)
	}
	return nil
}

// mysqlErrNumber is the server's error number of err, or 0.
func mysqlErrNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
