package mysql

import (
	"context"
	"fmt"

	"github.com/sandboxer/sandboxer/state"
)

// Rotate gives c's app user the password pw (sent as its
// mysql_native_password hash, so the clear text never reaches the
// server) and closes the user's open connections, over an admin (root)
// connection to c's endpoint: a warm-pool claim binds the claimant's
// credentials this way. The change is in the grant tables, so it
// outlives a restart of the server.
func Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error {
	if c.AdminUser == "" {
		return fmt.Errorf("the record has no admin user to rotate with")
	}
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		return err
	}
	admin, err := Open(c.Host, c.Port, c.AdminUser, c.AdminPassword, "", tlsConf)
	if err != nil {
		return err
	}
	defer admin.Close()
	conn, err := admin.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect as admin: %w", err)
	}
	defer conn.Close()
	stmt := "ALTER USER " + Account(c.User) + " IDENTIFIED VIA mysql_native_password USING " + QuoteString(NativePasswordHash(pw.Reveal()))
	if _, err := conn.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("ALTER USER %s: %w", c.User, err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?", c.User)
	if err != nil {
		return fmt.Errorf("list %s's connections: %w", c.User, err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("list %s's connections: %w", c.User, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		// 1094: the connection ended by itself meanwhile.
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil && mysqlErrNumber(err) != 1094 {
			return fmt.Errorf("close %s's connection %d: %w", c.User, id, err)
		}
	}
	return nil
}
