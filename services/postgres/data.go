package postgres

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// Runner runs commands in, and copies files into, the container (or pod)
// of one PostgreSQL instance: the runtime's exec and copy. Data moves with
// the server's own tools, so the service needs nothing else of a runtime.
type Runner = contract.Runner

// Data moves one instance's data: Dump, Keep, Load (snapshot.Engine's
// three steps, for one service) and RunSQL (seed files).
type Data struct {
	Run      Runner
	Creds    state.Credentials
	Features []string // the instance's postgres features
	Allowed  []string // the allowlist
}

// connectAs opens a connection to c's endpoint as user, over TLS when c
// carries a CA.
func connectAs(ctx context.Context, c state.Credentials, user string, password state.Secret, db string) (*pgx.Conn, error) {
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		return nil, err
	}
	return Connect(ctx, c.Host, c.Port, user, password, db, tlsConf)
}

// PostgreSQL data moves with the server's own pg_dump and pg_restore, run
// inside the instance's container as the image's postgres user over the
// local socket, which the official image's pg_hba trusts: no password on
// any command line, none in the environment. Loading never writes into
// the live database: the dump is restored into a template database, which
// is then cloned (CREATE DATABASE … TEMPLATE, a file copy) and swapped in.
// The template stays, so loading the same dump again — a reset — is only
// the clone and the swap.
const (
	OSUser = "postgres"
	// pgTemplatePrefix names kept template databases; the rest is the
	// first 24 hex digits of the dump's sha256.
	pgTemplatePrefix = "sbx_tpl_"
	// pgKeepTemplates bounds how many templates an instance keeps (each is
	// a copy of its data in the container's data directory); the oldest go
	// first.
	pgKeepTemplates = 4
	pgRestoreDir    = "/tmp/sandboxer-restore"
)

func pgTemplateName(key string) string { return pgTemplatePrefix + shortKey(key) }

func shortKey(key string) string {
	if len(key) > 24 {
		return key[:24]
	}
	return key
}

// Dump writes pg_dump -Fc of the handed-out database.
func (d Data) Dump(ctx context.Context, w io.Writer) error {
	c := d.Creds
	return d.Run.Exec(ctx, OSUser, []string{"pg_dump", "-U", c.AdminUser, "-d", c.Database, "-Fc"}, w)
}

// Keep restores snap into the template database for its key, unless the
// instance has it already.
func (d Data) Keep(ctx context.Context, snap snapshot.Data) error {
	c := d.Creds
	admin, err := connectAs(ctx, c, c.AdminUser, c.AdminPassword, "postgres")
	if err != nil {
		return fmt.Errorf("connect as admin: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	tpl := pgTemplateName(snap.Key)
	if ok, err := pgDatabaseExists(ctx, admin, tpl); err != nil || ok {
		return err
	}
	dir := pgRestoreDir + "-" + shortKey(snap.Key)
	dumpFile, listFile := path.Join(dir, "data.pgdump"), path.Join(dir, "restore.list")
	if err := d.Run.CopyIn(ctx, dir, map[string]string{"data.pgdump": snap.Path}, nil); err != nil {
		return err
	}
	defer func() {
		_ = d.Run.Exec(context.WithoutCancel(ctx), "root", []string{"rm", "-rf", dir}, nil)
	}()
	var list strings.Builder
	if err := d.Run.Exec(ctx, OSUser, []string{"pg_restore", "-l", dumpFile}, &list); err != nil {
		return fmt.Errorf("read the dump's table of contents: %w", err)
	}
	if holdsHypertableChunks(list.String()) {
		return errHypertables
	}
	feats := d.Features
	if err := d.Run.CopyIn(ctx, dir, nil, map[string][]byte{"restore.list": []byte(restoreList(list.String(), feats))}); err != nil {
		return err
	}
	// Built under a scratch name and renamed only when complete, so a
	// template that exists is always whole.
	scratch := "sbx_tmp_" + shortKey(snap.Key)
	role, db := pgx.Identifier{c.User}.Sanitize(), pgx.Identifier{scratch}.Sanitize()
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + db + " WITH (FORCE)",
		"CREATE DATABASE " + db + " OWNER " + role + " STRATEGY = FILE_COPY",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			return fmt.Errorf("prepare template database: %w", err)
		}
	}
	if err := d.createExtensions(ctx, scratch, feats); err != nil {
		return err
	}
	err = d.Run.Exec(ctx, OSUser, []string{"pg_restore", "-U", c.AdminUser, "-d", scratch,
		"--no-owner", "--no-privileges", "--role=" + c.User, "--exit-on-error", "--single-transaction",
		"-L", listFile, dumpFile}, nil)
	if err != nil {
		_, _ = admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		return fmt.Errorf("restore the dump as %s: %w", c.User, err)
	}
	for _, q := range []string{
		"ALTER DATABASE " + db + " RENAME TO " + pgx.Identifier{tpl}.Sanitize(),
		"ALTER DATABASE " + pgx.Identifier{tpl}.Sanitize() + " WITH ALLOW_CONNECTIONS false",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			return fmt.Errorf("keep template database: %w", err)
		}
	}
	return pgPruneTemplates(ctx, admin)
}

// pgLoad swaps the handed-out database for a clone of d's template,
// building the template first when the instance lacks it. Sessions of the
// old database are terminated; the clone is made before the old database
// is dropped, so a failure leaves the old one in place.
func (d Data) Load(ctx context.Context, snap snapshot.Data) error {
	if err := d.Keep(ctx, snap); err != nil {
		return err
	}
	c := d.Creds
	admin, err := connectAs(ctx, c, c.AdminUser, c.AdminPassword, "postgres")
	if err != nil {
		return fmt.Errorf("connect as admin: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	live := pgx.Identifier{c.Database}.Sanitize()
	next := pgx.Identifier{"sbx_next_" + shortKey(snap.Key)}.Sanitize()
	tpl := pgx.Identifier{pgTemplateName(snap.Key)}.Sanitize()
	role := pgx.Identifier{c.User}.Sanitize()
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+next+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("clone template: %w", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+next+" TEMPLATE "+tpl+" OWNER "+role+" STRATEGY = FILE_COPY"); err != nil {
		return fmt.Errorf("clone template: %w", err)
	}
	// From here to the rename the handed-out database does not exist:
	// a client connecting in these milliseconds gets "does not exist".
	wctx := context.WithoutCancel(ctx)
	if _, err := admin.Exec(wctx, "DROP DATABASE IF EXISTS "+live+" WITH (FORCE)"); err != nil {
		_, _ = admin.Exec(wctx, "DROP DATABASE IF EXISTS "+next)
		return fmt.Errorf("replace database %s: %w", c.Database, err)
	}
	if _, err := admin.Exec(wctx, "ALTER DATABASE "+next+" RENAME TO "+live); err != nil {
		return fmt.Errorf("replace database %s: %w", c.Database, err)
	}
	return nil
}

// createExtensions creates the instance's features in db as the admin,
// the way provisioning did, so the restore (running as the handed-out
// role, which may not create untrusted extensions) finds them.
func (d Data) createExtensions(ctx context.Context, db string, feats []string) error {
	if len(feats) == 0 {
		return nil
	}
	c := d.Creds
	conn, err := connectAs(ctx, c, c.AdminUser, c.AdminPassword, db)
	if err != nil {
		return fmt.Errorf("connect as admin: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, ExtensionsBlock(feats, d.Allowed)); err != nil {
		return fmt.Errorf("create extensions %s: %w", strings.Join(feats, ", "), err)
	}
	return nil
}

var tocExtension = regexp.MustCompile(`^\d+; \d+ \d+ (?:EXTENSION - |COMMENT - EXTENSION )(\S+)`)

// restoreList is the dump's table of contents without the extensions the
// admin already created (and their comments): as the handed-out role,
// CREATE EXTENSION IF NOT EXISTS passes but COMMENT ON EXTENSION would
// fail for want of ownership. Extensions the role itself had created (the
// trusted ones) stay, and it creates them again.
func restoreList(toc string, adminCreated []string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(toc))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := tocExtension.FindStringSubmatch(line); m != nil && (slices.Contains(adminCreated, m[1]) || m[1] == "plpgsql") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// errHypertables refuses a dump with TimescaleDB hypertables: their chunks
// live in the extension's own schema, which only a superuser may write
// to, and TimescaleDB restores them only between timescaledb_pre_restore()
// and timescaledb_post_restore(), as a superuser. Data is restored as the
// sandbox's own role, which is never one.
var errHypertables = errors.New("the dump holds TimescaleDB hypertables, which sandboxer cannot restore yet: " +
	"their chunks can be written only by a superuser between timescaledb_pre_restore() and timescaledb_post_restore(), " +
	"and data is restored as the sandbox's own role; nothing was loaded")

// holdsHypertableChunks reports whether a pg_restore -l table of contents
// has objects in TimescaleDB's internal schema (hypertable chunks).
func holdsHypertableChunks(toc string) bool {
	for _, line := range strings.Split(toc, "\n") {
		if strings.HasPrefix(line, ";") {
			continue
		}
		if strings.Contains(line, " _timescaledb_internal ") {
			return true
		}
	}
	return false
}

func pgDatabaseExists(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&ok); err != nil {
		return false, fmt.Errorf("look for database %s: %w", name, err)
	}
	return ok, nil
}

// pgPruneTemplates drops all but the newest pgKeepTemplates templates.
func pgPruneTemplates(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY oid DESC OFFSET $2`,
		pgTemplatePrefix, pgKeepTemplates)
	if err != nil {
		return fmt.Errorf("list template databases: %w", err)
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list template databases: %w", err)
	}
	for _, name := range old {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("drop old template %s: %w", name, err)
		}
	}
	return nil
}

// RunSQL runs seed files with the container's psql as the handed-out
// role over the local socket, one after another, each stopping at its
// first error. Errors name the file as the configuration does.
func (d Data) RunSQL(ctx context.Context, files []snapshot.SQLFile) error {
	c := d.Creds
	dir := "/tmp/sandboxer-seed-" + randomHex(6)
	local := map[string]string{}
	for i, f := range files {
		local[fmt.Sprintf("%02d.sql", i)] = f.Path
	}
	if err := d.Run.CopyIn(ctx, dir, local, nil); err != nil {
		return err
	}
	defer func() {
		_ = d.Run.Exec(context.WithoutCancel(ctx), "root", []string{"rm", "-rf", dir}, nil)
	}()
	for i, f := range files {
		in := path.Join(dir, fmt.Sprintf("%02d.sql", i))
		err := d.Run.Exec(ctx, OSUser, []string{"psql", "-X", "-q", "-v", "ON_ERROR_STOP=1",
			"-U", c.User, "-d", c.Database, "-f", in}, nil)
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), in, f.Name)
			return fmt.Errorf("seed file %s: %s", f.Name, msg)
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
