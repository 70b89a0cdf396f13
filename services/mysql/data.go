package mysql

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// Runner runs commands in, and copies files into, the container (or pod)
// of one instance: the runtime's exec and copy. Data moves with the
// server's own tools, so the service needs nothing else of a runtime.
type Runner = contract.Runner

// Data moves one instance's data: the handed-out database as SQL
// (mariadb-dump's format, which the mysql tools read too).
//
// The dump runs inside the container as OS root over the socket, which
// the init script lets root@localhost use (unix_socket): no password on a
// command line or in the environment. The load runs as the handed-out
// user, never as root, so a dump cannot create anything with more rights
// than the user has: DEFINER clauses are taken out on the way (objects
// are then defined by whoever loads them), and a dump that tries more
// (GRANT, SET GLOBAL, the mysql schema) fails.
type Data struct {
	Run   Runner
	Creds state.Credentials
}

// OSUser runs the data tools in the container. A runtime whose exec
// cannot choose the user (Kubernetes: the container's own, the image's
// mysql account) runs them as that user instead; asSocketUser logs in as
// whichever it is.
const OSUser = "root"

// asSocketUser runs tool over the server's socket as the account named
// like the OS user running it (root, or the server's own mysql account
// where exec runs as the container's user): both log in through
// unix_socket without a password (InitScript). The arguments are sh's
// positional parameters, never parsed as shell.
func asSocketUser(tool string, args ...string) []string {
	return append([]string{"sh", "-c", `exec "$0" --protocol=socket --user="$(id -un)" "$@"`, tool}, args...)
}

// Dump writes the handed-out database as SQL: tables, data, views,
// routines, triggers and events, without DEFINER clauses and without
// CREATE DATABASE/USE, so it loads into any database.
func (d Data) Dump(ctx context.Context, w io.Writer) error {
	fw := &definerFilter{w: bufio.NewWriter(w)}
	err := d.Run.Exec(ctx, OSUser, asSocketUser("mariadb-dump",
		"--single-transaction", "--routines", "--triggers", "--events", "--hex-blob",
		"--skip-comments", "--skip-dump-date", d.Creds.Database), fw)
	if err != nil {
		return fmt.Errorf("mariadb-dump %s: %w", d.Creds.Database, err)
	}
	return fw.Close()
}

// LoadFile replaces the handed-out database with the dump at localPath: the
// database is dropped and made again empty (as root), then the dump runs
// in it as the handed-out user over the socket. A dump that fails half way
// leaves what it loaded so far.
func (d Data) LoadFile(ctx context.Context, localPath string) error {
	c := d.Creds
	dir := "/tmp/sandboxer-load-" + randomHex(6)
	if err := d.Run.CopyIn(ctx, dir, map[string]string{"data.sql": localPath}, map[string][]byte{"client.cnf": d.clientCnf()}); err != nil {
		return err
	}
	defer func() {
		_ = d.Run.Exec(context.WithoutCancel(ctx), "root", []string{"rm", "-rf", dir}, nil)
	}()
	db := QuoteIdent(c.Database)
	if err := d.Run.Exec(ctx, OSUser, asSocketUser("mariadb", "-e",
		"DROP DATABASE IF EXISTS "+db+"; CREATE DATABASE "+db+" CHARACTER SET utf8mb4"), nil); err != nil {
		return fmt.Errorf("empty database %s: %w", c.Database, err)
	}
	if err := d.Run.Exec(ctx, OSUser, d.runFile(dir, path.Join(dir, "data.sql")), nil); err != nil {
		return fmt.Errorf("load the dump as %s: %w", c.User, err)
	}
	return nil
}

// SQLFile is one seed file: its name as the configuration gives it, and
// the local path of its content.
type SQLFile struct {
	Name, Path string
}

// RunSQL runs seed files in the handed-out database as the handed-out
// user over the socket, one after another, each stopping at its first
// error. Errors name the file as the configuration does.
func (d Data) RunSQL(ctx context.Context, files []SQLFile) error {
	dir := "/tmp/sandboxer-seed-" + randomHex(6)
	local := map[string]string{}
	for i, f := range files {
		local[fmt.Sprintf("%02d.sql", i)] = f.Path
	}
	if err := d.Run.CopyIn(ctx, dir, local, map[string][]byte{"client.cnf": d.clientCnf()}); err != nil {
		return err
	}
	defer func() {
		_ = d.Run.Exec(context.WithoutCancel(ctx), "root", []string{"rm", "-rf", dir}, nil)
	}()
	for i, f := range files {
		in := path.Join(dir, fmt.Sprintf("%02d.sql", i))
		err := d.Run.Exec(ctx, OSUser, d.runFile(dir, in), nil)
		if err != nil {
			return fmt.Errorf("seed file %s: %s", f.Name, strings.ReplaceAll(err.Error(), in, f.Name))
		}
	}
	return nil
}

// runFile is the command that runs the SQL file in as the handed-out
// user, with the option file in dir. The file is the client's standard
// input, in batch mode, which stops at the first failing statement with a
// non-zero exit (the client's "source" command would report it and go
// on). The paths are positional arguments of sh, never parsed as shell.
func (d Data) runFile(dir, in string) []string {
	return []string{"sh", "-c", `exec mariadb --defaults-extra-file="$1" --protocol=socket --database="$2" <"$3"`,
		"sh", path.Join(dir, "client.cnf"), d.Creds.Database, in}
}

// clientCnf is an option file that logs the client in as the handed-out
// user: the password goes in a file of the run's own (0600, root's), not
// on a command line.
func (d Data) clientCnf() []byte {
	return []byte(fmt.Sprintf("[client]\nuser=%s\npassword=%s\n", optionValue(d.Creds.User), optionValue(d.Creds.Password.Reveal())))
}

// optionValue quotes a value for an option file: double quotes with
// backslash escapes, so #, ; and spaces stay part of it.
func optionValue(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// definerPattern is a DEFINER clause (DEFINER=`u`@`h`, with “ for a
// backquote inside) where mariadb-dump writes one: at the start of a
// statement's first line, after CREATE and the version comments
// (CREATE DEFINER=… PROCEDURE, /*!50003 CREATE*/ /*!50017 DEFINER=…*/
// /*!50003 TRIGGER, /*!50013 DEFINER=… SQL SECURITY DEFINER */). Rows
// (lines starting with "(" or INSERT) never match, so data holding that
// text stays as it was.
var definerPattern = regexp.MustCompile("^((?:/\\*!\\d+ CREATE\\*/ )?(?:/\\*!\\d+ )?(?:CREATE )?)DEFINER=`(?:[^`]|``)*`@`(?:[^`]|``)*` ?")

// definerFilter drops DEFINER clauses from the dump, line by line.
type definerFilter struct {
	w       *bufio.Writer
	pending []byte
}

func (f *definerFilter) Write(p []byte) (int, error) {
	f.pending = append(f.pending, p...)
	for {
		i := bytes.IndexByte(f.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := f.line(f.pending[:i+1]); err != nil {
			return 0, err
		}
		f.pending = f.pending[i+1:]
	}
}

func (f *definerFilter) line(l []byte) error {
	_, err := f.w.Write(definerPattern.ReplaceAll(l, []byte("$1")))
	return err
}

// Close writes what is left and flushes.
func (f *definerFilter) Close() error {
	if len(f.pending) > 0 {
		if err := f.line(f.pending); err != nil {
			return err
		}
		f.pending = nil
	}
	return f.w.Flush()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
