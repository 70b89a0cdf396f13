package docker

import (
	"context"
	"fmt"
	"path"
	"slices"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/docker/go-connections/nat"
	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/state"
)

// The service's own facts are services/postgres's.
const (
	postgresPort   = nat.Port("5432/tcp")
	defaultPGDATA  = pgsvc.DefaultPGDATA
	pgPasswordFile = pgsvc.PasswordFile
)

// startPostgres starts from a template data directory (pgfromtemplate.go)
// unless the provider turns templates off; else, and to make a template,
// it runs the official-image contract with sandboxer's admin as
// POSTGRES_USER (the image makes it a superuser), the data directory on a
// labelled anonymous volume or a tmpfs (see dataMounts) and durability
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
		"POSTGRES_INITDB_ARGS=" + pgsvc.InitdbArgs,
	}
	env = append(env, pgsvc.UTCUnlessSet(imageEnvOf(ii))...)
	env = append(env, pgsvc.ServerBinFirst(imageEnvOf(ii))...)
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
	spec.Tmpfs, spec.Volumes = dataMounts(ii, pgdata, p.cfg.Storage)
	spec.Cmd = append(spec.Cmd, pgsvc.LeanArgs...)
	spec.Cmd = append(spec.Cmd, pgsvc.PreloadArgs(feats)...)
	// What the server runs with during a template's init (pgtemplate.go).
	initCmd := slices.Clone(spec.Cmd)
	if t := b.reach.tls; t != nil {
		spec.Cmd = append(spec.Cmd, postgresTLSArgs()...)
	}
	var tlsFiles []containerFile
	if t := b.reach.tls; t != nil {
		tlsFiles = append(t.files(), postgresHBA())
	}
	var conn *pgx.Conn
	if b.fork != nil {
		// A fork's copy starts from the source's data (fork.go).
		var ep []string
		if ii.Config != nil {
			ep = ii.Config.Entrypoint
		}
		conn, c, err = p.startPostgresFromFork(ctx, b, c, spec, facts.Owner, ep, pgdata, tlsFiles)
	} else if p.templatesOn(facts.Owner) {
		initSQL := pgsvc.TemplateInitScript(c, feats, p.cat.Allowed("postgres"))
		tb := templateBuild{ref: img.Ref, ii: ii, owner: facts.Owner, env: env, cmd: initCmd, init: initSQL, admin: c.AdminUser,
			key: templateKey(p.templateSalt, ii.ID, facts.Owner, sortedEnv(env), append(slices.Clone(initCmd), string(initSQL)))}
		conn, c, err = p.startPostgresFromTemplate(ctx, b, c, tb, spec, pgdata, tlsFiles)
	} else {
		var id string
		if id, c.Port, err = p.startPostgresFromScratch(ctx, b, feats, c, facts.Owner, spec, tlsFiles); err == nil {
			// The image's init server listens on the Unix socket only, so
			// an answer over TCP comes from the real server, after the
			// init script ran.
			conn, err = p.awaitPostgres(ctx, id, c)
		}
	}
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	available, err := pgsvc.Verify(ctx, conn, img.Ref, c.Database, feats, p.cat.Allowed("postgres"))
	if err != nil {
		return err
	}
	b.done("postgres", c, available)
	return nil
}

// startPostgresFromScratch starts a container whose entrypoint
// initialises an empty data directory and runs the init script.
func (p *Provider) startPostgresFromScratch(ctx context.Context, b *build, feats []string, c state.Credentials, owner fileOwner, spec containerSpec, tlsFiles []containerFile) (string, int, error) {
	id, name, err := p.createContainer(ctx, b, spec)
	if err != nil {
		return "", 0, err
	}
	files := []containerFile{
		// Mode 0400: the entrypoint reads it as root or as the image's
		// postgres user, which owns it (facts.Owner).
		{Path: secretPath(pgPasswordFile), Content: []byte(c.AdminPassword.Reveal()), Mode: 0o400},
		// World-readable: psql reads it as the image's postgres user, whose
		// uid differs between images (999 on Debian, 70 on Alpine). It holds
		// no password, only the verifier the server keeps anyway.
		{Path: path.Join(pgsvc.InitDir, pgsvc.InitScriptName), Content: pgsvc.InitScript(c, b.pgVerifier, feats, p.cat.Allowed("postgres")), Mode: 0o444},
	}
	files = append(files, tlsFiles...)
	if err := p.copyFiles(ctx, id, owner, files...); err != nil {
		return "", 0, fmt.Errorf("copy admin password and init script into %s: %w", name, err)
	}
	port, err := p.startContainer(ctx, b, "postgres", id, name, postgresPort)
	return id, port, err
}

// awaitPostgres waits for the app role's login and SELECT 1 and returns
// that connection.
func (p *Provider) awaitPostgres(ctx context.Context, id string, c state.Credentials) (*pgx.Conn, error) {
	tlsConf, err := clientTLS(c, c.Host)
	if err != nil {
		return nil, err
	}
	var conn *pgx.Conn
	err = p.waitReady(ctx, id, p.readyTimeout(), func(ctx context.Context) error {
		var err error
		conn, err = pgsvc.Ready(ctx, c, tlsConf)
		return err
	})
	return conn, err
}
