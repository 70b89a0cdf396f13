package mysql

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/sandboxer/sandboxer/state"
)

// The setup runs in the image's own init phase: the official entrypoint
// (and the local image's copy of it) runs /docker-entrypoint-initdb.d/*.sql
// once, on an empty data directory, with the mariadb client as root over
// the socket of a temporary server that listens on no TCP port, and only
// then starts the real server; a failing statement stops the entrypoint,
// so the container exits and its log says why. The real server's first
// TCP answer already comes from a finished sandbox.
const (
	InitDir = "/docker-entrypoint-initdb.d"
	// InitScriptName sorts after numbered scripts an image ships.
	InitScriptName = "sandboxer.sql"
)

// AppPrivileges is what the handed-out user may do, on its own database
// and on the databases named after it (see Grants): everything a schema
// owner does, and no global privilege. Left out, so never held: FILE
// (LOAD_FILE, SELECT … INTO OUTFILE, LOAD DATA INFILE on the server's
// files), SUPER and its 10.5+ parts (SET GLOBAL, KILL of other sessions,
// the binlog), PROCESS (other sessions' queries), RELOAD, SHUTDOWN,
// CREATE USER, GRANT OPTION, REPLICATION SLAVE/CLIENT/MASTER ADMIN,
// BINLOG ADMIN/MONITOR/REPLAY, CONNECTION ADMIN, READ_ONLY ADMIN,
// FEDERATED ADMIN, SET USER (a DEFINER other than itself), and the
// privileges on the mysql schema (the grant tables).
const AppPrivileges = "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, REFERENCES, INDEX, ALTER, " +
	"CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, CREATE VIEW, SHOW VIEW, CREATE ROUTINE, " +
	"ALTER ROUTINE, EVENT, TRIGGER, DELETE HISTORY"

// InitScript is the SQL the entrypoint runs as root: root@localhost also
// by the socket's peer (OS root in the container, for the data tools,
// without a password on any command line), the app database, the app
// user from a mysql_native_password hash computed here, the runtime's
// admin account when it is not root (every privilege, over TCP; never
// handed out) (the clear-text
// password never enters the container), its grants, and the requested
// plugins (features must already be on the allowlist). The SQL is
// MariaDB's dialect (IDENTIFIED VIA, BEGIN NOT ATOMIC).
func InitScript(c state.Credentials, feats []string) []byte {
	var b bytes.Buffer
	b.WriteString("-- Written by sandboxer; run once by the image's entrypoint as root.\n")
	fmt.Fprintf(&b, "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING %s;\n",
		QuoteString(NativePasswordHash(c.AdminPassword.Reveal())))
	// The server's own OS account, through the socket only: where a
	// runtime's exec runs as the container's user (mysql) rather than
	// root, the data tools log in as it (data.go). Only a process of that
	// OS user in the container can, which could read the data directory
	// anyway.
	b.WriteString("CREATE OR REPLACE USER 'mysql'@'localhost' IDENTIFIED VIA unix_socket;\n")
	b.WriteString("GRANT ALL PRIVILEGES ON *.* TO 'mysql'@'localhost';\n")
	if c.AdminUser != "" && c.AdminUser != AdminUser {
		// The runtime's admin, over TCP (root is the socket's and
		// localhost's only): rotation and the databases per test (whose
		// users it grants privileges on their own databases, hence GRANT
		// OPTION), nothing the user sees.
		fmt.Fprintf(&b, "CREATE USER %s IDENTIFIED VIA mysql_native_password USING %s;\n",
			Account(c.AdminUser), QuoteString(NativePasswordHash(c.AdminPassword.Reveal())))
		fmt.Fprintf(&b, "GRANT ALL PRIVILEGES ON *.* TO %s WITH GRANT OPTION;\n", Account(c.AdminUser))
	}
	fmt.Fprintf(&b, "CREATE DATABASE %s CHARACTER SET utf8mb4;\n", QuoteIdent(c.Database))
	fmt.Fprintf(&b, "CREATE USER %s IDENTIFIED VIA mysql_native_password USING %s;\n",
		Account(c.User), QuoteString(NativePasswordHash(c.Password.Reveal())))
	for _, stmt := range Grants(c.User, c.Database) {
		b.WriteString(stmt + ";\n")
	}
	b.WriteString(InstallBlock(feats))
	return b.Bytes()
}

// Grants gives user AppPrivileges on db, on the databases whose names
// start with db_ (a test framework's own: Rails' and Prisma's suffixes),
// and on test_db (Django's test database). They are database-level
// grants (db.*): nothing on *.*, so the user can neither reach the mysql
// schema nor hold a global privilege. Patterns escape _ and % in db, so
// a database named a_b gets no grant on aXb.
func Grants(user, db string) []string {
	e := escapePattern(db)
	var out []string
	for _, pattern := range []string{e, e + `\_%`, `test\_` + e} {
		out = append(out, fmt.Sprintf("GRANT %s ON %s.* TO %s", AppPrivileges, QuoteIdent(pattern), Account(user)))
	}
	return out
}

// Account is 'user'@'%': any host, as the official image makes its user.
func Account(user string) string { return QuoteString(user) + "@'%'" }

// NativePasswordHash is mysql_native_password's stored form of password:
// "*" and the upper-case hex of SHA1(SHA1(password)), as PASSWORD()
// computes it. Knowing it is not enough to log in.
func NativePasswordHash(password string) string {
	first := sha1.Sum([]byte(password))
	second := sha1.Sum(first[:])
	return "*" + strings.ToUpper(hex.EncodeToString(second[:]))
}

// QuoteString quotes a string literal for the default SQL mode
// (backslash escapes on).
func QuoteString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(s) + "'"
}

// QuoteIdent quotes an identifier.
func QuoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// escapePattern makes a database name match only itself in a grant.
func escapePattern(s string) string {
	return strings.NewReplacer(`\`, `\\`, `_`, `\_`, `%`, `\%`).Replace(s)
}
