package main

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/rogpeppe/go-internal/testscript"
)

// mysqlConfig turns the handed-out SANDBOXER_MYSQL_URL
// (mysql://user:password@host:port/db, with TLS ?ssl-mode=VERIFY_IDENTITY
// &ssl-ca=FILE) into go-sql-driver/mysql's configuration, as an
// application would.
func mysqlConfig(ts *testscript.TestScript, env map[string]string) *mysql.Config {
	u, err := url.Parse(env["SANDBOXER_MYSQL_URL"])
	ts.Check(err)
	if u.Scheme != "mysql" {
		ts.Fatalf("SANDBOXER_MYSQL_URL scheme %q, want mysql", u.Scheme)
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", u.Host
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	cfg.Timeout = 5 * time.Second
	if u.Query().Get("ssl-mode") == "VERIFY_IDENTITY" {
		host, _, _ := net.SplitHostPort(u.Host)
		pool := caPool(ts, env, "mysql")
		if pool == nil {
			ts.Fatalf("a TLS URL and no SANDBOXER_MYSQL_CA")
		}
		cfg.TLS = &tls.Config{ServerName: host, RootCAs: pool}
	}
	return cfg
}

// cmdMySQLCheck logs in with SANDBOXER_MYSQL_URL from an env JSON file
// through go-sql-driver/mysql and runs SELECT 1, then any further SQL
// given; `! mysqlcheck` expects the login or a statement to fail.
//
//	mysqlcheck ENVJSON [SQL...]
func cmdMySQLCheck(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: mysqlcheck ENVJSON [SQL...]")
	}
	cfg := mysqlConfig(ts, envFile(ts, args[0]))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := func() error {
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return err
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		for _, q := range append([]string{"SELECT 1"}, args[1:]...) {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}()
	expect(ts, "mysqlcheck", neg, err)
}

// cmdMariaDBCLI runs the image's own client, mariadb, in a throwaway
// container of IMAGE on the host's network, logged in with the parts of
// SANDBOXER_MYSQL_URL (the password in MYSQL_PWD, not on the command
// line), and prints what it prints (batch mode, no column names).
//
//	mariadbcli ENVJSON IMAGE SQL
func cmdMariaDBCLI(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: mariadbcli ENVJSON IMAGE SQL")
	}
	cfg := mysqlConfig(ts, envFile(ts, args[0]))
	host, port, err := net.SplitHostPort(cfg.Addr)
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "host", "-e", "MYSQL_PWD",
		"--entrypoint", "mariadb", args[1],
		"-h", host, "-P", port, "-u", cfg.User, "-N", "-B", "-e", args[2], cfg.DBName)
	cmd.Env = append(cmd.Environ(), "MYSQL_PWD="+cfg.Passwd)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%v: %s", err, strings.ReplaceAll(string(ee.Stderr), cfg.Passwd, "***"))
		}
	}
	_, _ = ts.Stdout().Write(out)
	expect(ts, "mariadbcli", neg, err)
}
