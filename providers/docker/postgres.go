package docker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/docker/go-connections/nat"
	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/state"
)

const (
	postgresPort   = nat.Port("5432/tcp")
	defaultPGDATA  = "/var/lib/postgresql/data"
	pgPasswordFile = "postgres-password"
)

// startPostgres runs the official-image contract with sandboxer's admin as
// POSTGRES_USER (the image makes it a superuser), the data directory on a
// tmpfs and durability switched off (a sandbox is disposable), waits for a
// real SELECT 1, then creates the handed-out role, its database and the
// requested extensions.
func (p *Provider) startPostgres(ctx context.Context, b *build, feats []string, c state.Credentials) error {
	img, err := p.image("postgres")
	if err != nil {
		return err
	}
	ii, err := p.inspectImage(ctx, "postgres", img.Ref)
	if err != nil {
		return err
	}
	pgdata := imageEnv(ii, "PGDATA")
	if pgdata == "" {
		pgdata = defaultPGDATA
	}
	spec := containerSpec{
		Service: "postgres",
		Image:   img.Ref,
		// The admin password goes in as a file (the official image's
		// POSTGRES_PASSWORD_FILE), so `docker inspect` does not show it; the
		// app role's password never reaches the container in clear text
		// (see setupPostgres).
		Env: []string{
			"POSTGRES_USER=" + c.AdminUser,
			"POSTGRES_PASSWORD_FILE=" + secretPath(pgPasswordFile),
			"POSTGRES_DB=postgres",
			"POSTGRES_INITDB_ARGS=--nosync",
		},
		Cmd: []string{"postgres",
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
		},
		Port:  postgresPort,
		Tmpfs: tmpfsMounts(ii, pgdata),
	}
	id, name, err := p.createContainer(ctx, b, spec)
	if err != nil {
		return err
	}
	// Mode 0400: the entrypoint reads it as root (or as the postgres user
	// that owns it) before starting the server.
	pw := containerFile{Name: pgPasswordFile, Content: []byte(c.AdminPassword.Reveal()), Mode: 0o400}
	if err := p.copyFiles(ctx, id, pw); err != nil {
		return fmt.Errorf("copy admin password file into %s: %w", name, err)
	}
	port, err := p.startContainer(ctx, id, name, postgresPort)
	if err != nil {
		return err
	}
	c.Port = port
	// The image's init server listens on the Unix socket only, so an answer
	// over TCP comes from the real server.
	err = p.waitReady(ctx, id, p.readyTimeout(), func(ctx context.Context) error {
		return pgPing(ctx, c.Host, c.Port, c.AdminUser, c.AdminPassword, "postgres")
	})
	if err != nil {
		return err
	}
	available, err := p.setupPostgres(ctx, img.Ref, c, feats)
	if err != nil {
		return err
	}
	b.done("postgres", c, available)
	return nil
}

// setupPostgres creates the app role and database as admin, enables the
// requested extensions in that database, checks the app role can log in,
// and returns the allowed extensions the image provides.
func (p *Provider) setupPostgres(ctx context.Context, ref string, c state.Credentials, feats []string) ([]string, error) {
	admin, err := pgConnect(ctx, c.Host, c.Port, c.AdminUser, c.AdminPassword, "postgres")
	if err != nil {
		return nil, fmt.Errorf("connect as admin: %w", err)
	}
	defer admin.Close(ctx)

	offered, err := queryStrings(ctx, admin, "SELECT name FROM pg_available_extensions")
	if err != nil {
		return nil, fmt.Errorf("list available extensions: %w", err)
	}
	allowed := p.cat.Allowed("postgres")
	available := intersect(allowed, offered)
	for _, f := range feats {
		if !slices.Contains(offered, f) {
			return nil, fmt.Errorf("postgres image %q does not provide extension %q (available allowed extensions: %s)",
				ref, f, strings.Join(available, ", "))
		}
	}

	// A pre-hashed SCRAM verifier: the server never sees the clear text, so
	// it cannot turn up in a statement log or pg_stat_activity.
	verifier, err := scramVerifier(c.Password.Reveal())
	if err != nil {
		return nil, err
	}
	role := pgx.Identifier{c.User}.Sanitize()
	stmts := []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD %s NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS",
			role, quoteLiteral(verifier)),
		fmt.Sprintf("CREATE DATABASE %s OWNER %s", pgx.Identifier{c.Database}.Sanitize(), role),
	}
	for _, s := range stmts {
		if _, err := admin.Exec(ctx, s); err != nil {
			// The statement is not quoted: it holds the verifier.
			return nil, fmt.Errorf("create role and database %q: %w", c.Database, err)
		}
	}

	if err := p.createExtensions(ctx, c, feats, allowed); err != nil {
		return nil, err
	}
	if err := pgPing(ctx, c.Host, c.Port, c.User, c.Password, c.Database); err != nil {
		return nil, fmt.Errorf("log in as the app role: %w", err)
	}
	return available, nil
}

// createExtensions runs CREATE EXTENSION … CASCADE as admin inside the app
// database. CASCADE may only pull in extensions that are themselves allowed
// (earthdistance needs cube), so the dependency closure is checked first.
func (p *Provider) createExtensions(ctx context.Context, c state.Credentials, feats, allowed []string) error {
	if len(feats) == 0 {
		return nil
	}
	conn, err := pgConnect(ctx, c.Host, c.Port, c.AdminUser, c.AdminPassword, c.Database)
	if err != nil {
		return fmt.Errorf("connect as admin to %q: %w", c.Database, err)
	}
	defer conn.Close(ctx)
	requires, err := extensionRequires(ctx, conn)
	if err != nil {
		return err
	}
	installed, err := queryStrings(ctx, conn, "SELECT extname FROM pg_extension")
	if err != nil {
		return fmt.Errorf("list installed extensions: %w", err)
	}
	for _, f := range feats {
		if dep, ok := disallowedDependency(f, requires, allowed, installed); ok {
			return fmt.Errorf("extension %q requires %q, which is not on the allowlist", f, dep)
		}
	}
	for _, f := range feats {
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+pgx.Identifier{f}.Sanitize()+" CASCADE"); err != nil {
			return fmt.Errorf("create extension %q: %w", f, err)
		}
	}
	return nil
}

// extensionRequires maps each available extension to what its default
// version requires.
func extensionRequires(ctx context.Context, conn *pgx.Conn) (map[string][]string, error) {
	rows, err := conn.Query(ctx, `SELECT e.name, coalesce(v.requires, '{}')::text[]
		FROM pg_available_extensions e
		JOIN pg_available_extension_versions v ON v.name = e.name AND v.version = e.default_version`)
	if err != nil {
		return nil, fmt.Errorf("list extension dependencies: %w", err)
	}
	out := map[string][]string{}
	var name string
	var reqs []string
	_, err = pgx.ForEachRow(rows, []any{&name, &reqs}, func() error {
		out[name] = slices.Clone(reqs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list extension dependencies: %w", err)
	}
	return out, nil
}

// disallowedDependency walks what ext requires, transitively, and returns
// the first dependency that is neither allowed nor already installed.
func disallowedDependency(ext string, requires map[string][]string, allowed, installed []string) (string, bool) {
	seen := map[string]bool{}
	stack := slices.Clone(requires[ext])
	for len(stack) > 0 {
		dep := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[dep] || slices.Contains(installed, dep) {
			continue
		}
		seen[dep] = true
		if !slices.Contains(allowed, dep) {
			return dep, true
		}
		stack = append(stack, requires[dep]...)
	}
	return "", false
}

// pgConnect opens one connection. The password is set on the parsed config,
// never written into a connection string that an error could echo.
func pgConnect(ctx context.Context, host string, port int, user string, password state.Secret, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable application_name=sandboxer",
		host, port, quoteConnValue(user), quoteConnValue(db)))
	if err != nil {
		return nil, fmt.Errorf("postgres connection config: %w", err)
	}
	cfg.Password = password.Reveal()
	return pgx.ConnectConfig(ctx, cfg)
}

// pgPing is the readiness and liveness probe: log in and run SELECT 1.
func pgPing(ctx context.Context, host string, port int, user string, password state.Secret, db string) error {
	conn, err := pgConnect(ctx, host, port, user, password, db)
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

func queryStrings(ctx context.Context, conn *pgx.Conn, sql string) ([]string, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// quoteLiteral quotes a SQL string literal (standard_conforming_strings on).
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// quoteConnValue quotes a keyword/value connection string value.
func quoteConnValue(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
