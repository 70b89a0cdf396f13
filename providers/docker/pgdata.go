package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// PostgreSQL data moves with the server's own pg_dump and pg_restore, run
// inside the instance's container as the image's postgres user over the
// local socket, which the official image's pg_hba trusts: no password on
// any command line, none in the environment. Loading never writes into
// the live database: the dump is restored into a template database, which
// is then cloned (CREATE DATABASE … TEMPLATE, a file copy) and swapped in.
// The template stays, so loading the same dump again — a reset — is only
// the clone and the swap.
const (
	pgOSUser = "postgres"
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

// pgDump writes pg_dump -Fc of the handed-out database.
func (p *Provider) pgDump(ctx context.Context, rec *state.Record, w io.Writer) error {
	id, c, err := serviceOf(rec, "postgres")
	if err != nil {
		return err
	}
	return p.execIn(ctx, id, pgOSUser, []string{"pg_dump", "-U", c.AdminUser, "-d", c.Database, "-Fc"}, w)
}

// pgKeep restores d into the template database for its key, unless the
// instance has it already.
func (p *Provider) pgKeep(ctx context.Context, rec *state.Record, d snapshot.Data) error {
	id, c, err := serviceOf(rec, "postgres")
	if err != nil {
		return err
	}
	admin, err := pgConnectAs(ctx, c, c.AdminUser, c.AdminPassword, "postgres")
	if err != nil {
		return fmt.Errorf("connect as admin: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	tpl := pgTemplateName(d.Key)
	if ok, err := pgDatabaseExists(ctx, admin, tpl); err != nil || ok {
		return err
	}
	dir := pgRestoreDir + "-" + shortKey(d.Key)
	dumpFile, listFile := path.Join(dir, "data.pgdump"), path.Join(dir, "restore.list")
	if err := p.copyIn(ctx, id, dir, map[string]string{"data.pgdump": d.Path}, nil); err != nil {
		return err
	}
	defer func() {
		_ = p.execIn(context.WithoutCancel(ctx), id, "root", []string{"rm", "-rf", dir}, nil)
	}()
	var list strings.Builder
	if err := p.execIn(ctx, id, pgOSUser, []string{"pg_restore", "-l", dumpFile}, &list); err != nil {
		return fmt.Errorf("read the dump's table of contents: %w", err)
	}
	if holdsHypertableChunks(list.String()) {
		return errHypertables
	}
	feats := rec.Features["postgres"]
	if err := p.copyIn(ctx, id, dir, nil, map[string][]byte{"restore.list": []byte(restoreList(list.String(), feats))}); err != nil {
		return err
	}
	// Built under a scratch name and renamed only when complete, so a
	// template that exists is always whole.
	scratch := "sbx_tmp_" + shortKey(d.Key)
	role, db := pgx.Identifier{c.User}.Sanitize(), pgx.Identifier{scratch}.Sanitize()
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + db + " WITH (FORCE)",
		"CREATE DATABASE " + db + " OWNER " + role + " STRATEGY = FILE_COPY",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			return fmt.Errorf("prepare template database: %w", err)
		}
	}
	if err := p.pgCreateExtensions(ctx, c, scratch, feats); err != nil {
		return err
	}
	err = p.execIn(ctx, id, pgOSUser, []string{"pg_restore", "-U", c.AdminUser, "-d", scratch,
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
func (p *Provider) pgLoad(ctx context.Context, rec *state.Record, d snapshot.Data) error {
	if err := p.pgKeep(ctx, rec, d); err != nil {
		return err
	}
	_, c, err := serviceOf(rec, "postgres")
	if err != nil {
		return err
	}
	admin, err := pgConnectAs(ctx, c, c.AdminUser, c.AdminPassword, "postgres")
	if err != nil {
		return fmt.Errorf("connect as admin: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	live := pgx.Identifier{c.Database}.Sanitize()
	next := pgx.Identifier{"sbx_next_" + shortKey(d.Key)}.Sanitize()
	tpl := pgx.Identifier{pgTemplateName(d.Key)}.Sanitize()
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

// pgCreateExtensions creates the instance's features in db as the admin,
// the way provisioning did, so the restore (running as the handed-out
// role, which may not create untrusted extensions) finds them.
func (p *Provider) pgCreateExtensions(ctx context.Context, c state.Credentials, db string, feats []string) error {
	if len(feats) == 0 {
		return nil
	}
	conn, err := pgConnectAs(ctx, c, c.AdminUser, c.AdminPassword, db)
	if err != nil {
		return fmt.Errorf("connect as admin: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, pgsvc.ExtensionsBlock(feats, p.cat.Allowed("postgres"))); err != nil {
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

// serviceOf returns the container and credentials of one service.
func serviceOf(rec *state.Record, svc string) (string, state.Credentials, error) {
	id := rec.Resources.Containers[svc]
	c, ok := rec.Credentials[svc]
	if id == "" || !ok {
		return "", state.Credentials{}, fmt.Errorf("%s has no %s", rec.Address, svc)
	}
	return id, c, nil
}
