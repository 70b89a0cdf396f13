package docker

import (
	"context"
	"crypto/tls"
	"fmt"
	"path"
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
// labelled anonymous volume or a tmpfs (see pgDataMounts) and durability
// switched off (a sandbox is disposable). The app role,
// its database and the requested extensions are made by an init script
// during the image's first start (see pginit.go); readiness is the app
// role's own login and SELECT 1, on the connection that then checks the
// extensions.
func (p *Provider) startPostgres(ctx context.Context, b *build, feats []string, c state.Credentials) error {
	img := b.images["postgres"]
	ii, err := p.inspectImage(ctx, "postgres", img.Ref)
	if err != nil {
		return err
	}
	facts, err := p.imageFacts(ctx, "postgres", img, ii)
	if err != nil {
		return err
	}
	pgdata := imageEnv(ii, "PGDATA")
	if pgdata == "" {
		pgdata = defaultPGDATA
	}
	// The admin password goes in as a file (the official image's
	// POSTGRES_PASSWORD_FILE), so `docker inspect` does not show it.
	env := []string{
		"POSTGRES_USER=" + c.AdminUser,
		"POSTGRES_PASSWORD_FILE=" + secretPath(pgPasswordFile),
		"POSTGRES_DB=postgres",
		"POSTGRES_INITDB_ARGS=" + pgInitdbArgs,
	}
	env = append(env, utcUnlessSet(ii)...)
	env = append(env, serverBinFirst(ii)...)
	spec := containerSpec{
		Service: "postgres",
		Image:   img.Ref,
		Env:     env,
		Cmd: []string{"postgres",
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
		},
		Port: postgresPort,
	}
	spec.Tmpfs, spec.Volumes = pgDataMounts(ii, pgdata, p.cfg.Storage)
	spec.Cmd = append(spec.Cmd, pgLeanArgs...)
	spec.Cmd = append(spec.Cmd, preloadArgs(feats)...)
	if t := b.reach.tls; t != nil {
		spec.Cmd = append(spec.Cmd, postgresTLSArgs()...)
	}
	id, name, err := p.createContainer(ctx, b, spec)
	if err != nil {
		return err
	}
	files := []containerFile{
		// Mode 0400: the entrypoint reads it as root or as the image's
		// postgres user, which owns it (facts.Owner).
		{Path: secretPath(pgPasswordFile), Content: []byte(c.AdminPassword.Reveal()), Mode: 0o400},
		// World-readable: psql reads it as the image's postgres user, whose
		// uid differs between images (999 on Debian, 70 on Alpine). It holds
		// no password, only the verifier the server keeps anyway.
		{Path: path.Join(initDir, initScriptName), Content: initScript(c, b.pgVerifier, feats, p.cat.Allowed("postgres")), Mode: 0o444},
	}
	if t := b.reach.tls; t != nil {
		files = append(append(files, t.files()...), postgresHBA())
	}
	if err := p.copyFiles(ctx, id, facts.Owner, files...); err != nil {
		return fmt.Errorf("copy admin password and init script into %s: %w", name, err)
	}
	port, err := p.startContainer(ctx, b, "postgres", id, name, postgresPort)
	if err != nil {
		return err
	}
	c.Port = port
	// The image's init server listens on the Unix socket only, so an answer
	// over TCP comes from the real server, after the init script ran.
	var conn *pgx.Conn
	err = p.waitReady(ctx, id, p.readyTimeout(), func(ctx context.Context) error {
		var err error
		conn, err = pgReady(ctx, c)
		return err
	})
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	available, err := p.verifyPostgres(ctx, conn, img.Ref, c.Database, feats)
	if err != nil {
		return err
	}
	b.done("postgres", c, available)
	return nil
}

// verifyPostgres checks, as the app role, that every requested extension
// exists in the app database, explaining any the init script skipped, and
// returns the allowed extensions the image provides with their default
// versions.
func (p *Provider) verifyPostgres(ctx context.Context, conn *pgx.Conn, ref, db string, feats []string) (map[string]string, error) {
	var offered, offeredVersions, installed []string
	err := conn.QueryRow(ctx, `SELECT
		ARRAY(SELECT name::text FROM pg_available_extensions ORDER BY name),
		ARRAY(SELECT coalesce(default_version, '') FROM pg_available_extensions ORDER BY name),
		ARRAY(SELECT extname::text FROM pg_extension)`).Scan(&offered, &offeredVersions, &installed)
	if err != nil {
		return nil, fmt.Errorf("list available and installed extensions: %w", err)
	}
	allowed := p.cat.Allowed("postgres")
	available := intersect(allowed, offered)
	versions := make(map[string]string, len(available))
	for i, name := range offered {
		if slices.Contains(available, name) && i < len(offeredVersions) {
			versions[name] = offeredVersions[i]
		}
	}
	for _, f := range feats {
		if !slices.Contains(offered, f) {
			return nil, fmt.Errorf("postgres image %q does not provide extension %q (available allowed extensions: %s)",
				ref, f, strings.Join(available, ", "))
		}
	}
	for _, f := range feats {
		if slices.Contains(installed, f) {
			continue
		}
		requires, err := extensionRequires(ctx, conn)
		if err != nil {
			return nil, err
		}
		if dep, ok := disallowedDependency(f, requires, allowed, installed); ok {
			return nil, fmt.Errorf("extension %q requires %q, which is not on the allowlist", f, dep)
		}
		return nil, fmt.Errorf("extension %q was not created in database %q", f, db)
	}
	return versions, nil
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
//
// tlsConf nil means a plain connection (sslmode=disable); otherwise the
// connection is TLS, verified as tlsConf says.
func pgConnect(ctx context.Context, host string, port int, user string, password state.Secret, db string, tlsConf *tls.Config) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable application_name=sandboxer",
		host, port, quoteConnValue(user), quoteConnValue(db)))
	if err != nil {
		return nil, fmt.Errorf("postgres connection config: %w", err)
	}
	cfg.Password = password.Reveal()
	cfg.TLSConfig = tlsConf
	return pgx.ConnectConfig(ctx, cfg)
}

// pgReady is Create's readiness probe: log in as the app role to its
// database and run SELECT 1. The connection stays open for the checks that
// follow.
func pgReady(ctx context.Context, c state.Credentials) (*pgx.Conn, error) {
	tlsConf, err := clientTLS(c, c.Host)
	if err != nil {
		return nil, err
	}
	conn, err := pgConnect(ctx, c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
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

// pgPing is the liveness probe: log in and run SELECT 1.
func pgPing(ctx context.Context, host string, port int, user string, password state.Secret, db string, tlsConf *tls.Config) error {
	conn, err := pgConnect(ctx, host, port, user, password, db, tlsConf)
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

// quoteLiteral quotes a SQL string literal (standard_conforming_strings on).
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// quoteConnValue quotes a keyword/value connection string value.
func quoteConnValue(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
