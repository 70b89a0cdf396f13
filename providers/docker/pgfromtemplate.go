package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/state"
)

// startPostgresFromTemplate starts a sandbox's PostgreSQL from a copy of
// the template tb names (pgtemplate.go), building the template first when
// there is none. The container's start script copies the template (with
// the app role, database and extensions) into the data directory (the
// sandbox's own volume or tmpfs), sets the admin's and the app role's
// SCRAM verifiers in single-user mode, and only then runs the image's
// entrypoint, which finds an initialised directory and starts the server:
// when the port first answers, every password it accepts is this
// sandbox's. A template the script finds damaged is rebuilt once and the
// sandbox started again; it never runs.
func (p *Provider) startPostgresFromTemplate(ctx context.Context, b *build, c state.Credentials,
	tb templateBuild, spec containerSpec, pgdata string, tlsFiles []containerFile) (*pgx.Conn, state.Credentials, error) {
	adminVerifier, err := scramVerifier(c.AdminPassword.Reveal())
	if err != nil {
		return nil, c, err
	}
	b.addSecrets(state.Secret(adminVerifier))
	if p.onSecrets != nil {
		p.onSecrets(adminVerifier)
	}
	sessions := pgsvc.TemplateSessions(c, adminVerifier, b.pgVerifier)
	names := make([]string, len(sessions))
	files := make([]containerFile, 0, len(sessions)+1+len(tlsFiles))
	for i, s := range sessions {
		names[i] = secretPath(fmt.Sprintf("pg-session-%d.sql", i+1))
		// Verifiers only, but read by nobody but the server's user.
		files = append(files, containerFile{Path: names[i], Content: s.SQL, Mode: 0o400})
	}
	script := pgsvc.TemplateStartScript(tb.key, sessions, names, pgsvc.SingleUserArgs(spec.Cmd))
	files = append(files, containerFile{Path: secretPath(templateStartScript), Content: script, Mode: 0o444})
	files = append(files, tlsFiles...)

	bad := ""
	for attempt := 1; ; attempt++ {
		t, err := p.ensureTemplate(ctx, b, tb, bad)
		if err != nil {
			return nil, c, err
		}
		id, port, err := p.startFromTemplate(ctx, b, templateSpec(spec, tb.ii, tb.owner, pgdata, t), tb.owner, files)
		var conn *pgx.Conn
		if err == nil {
			c.Port = port
			conn, err = p.awaitPostgres(ctx, id, c)
		}
		if err == nil || attempt > 1 || !errors.Is(err, errExited) || !p.exitedWith(ctx, id, pgsvc.TemplateDamaged) {
			return conn, c, err
		}
		// The template is damaged: this container never started a
		// server. Remove it (it mounts the template), rebuild, retry.
		if err := p.removeContainer(ctx, id); err != nil {
			return nil, c, err
		}
		bad = t.Build
	}
}

// startFromTemplate creates, fills and starts one container from spec.
func (p *Provider) startFromTemplate(ctx context.Context, b *build, spec containerSpec, owner fileOwner, files []containerFile) (string, int, error) {
	id, name, err := p.createContainer(ctx, b, spec)
	if err != nil {
		return "", 0, err
	}
	if err := p.copyFiles(ctx, id, owner, files...); err != nil {
		return id, 0, fmt.Errorf("copy credentials and start script into %s: %w", name, err)
	}
	port, err := p.startContainer(ctx, b, "postgres", id, name, postgresPort)
	return id, port, err
}

// exitedWith reports whether container id has stopped with code.
func (p *Provider) exitedWith(ctx context.Context, id string, code int) bool {
	ci, err := p.cli.ContainerInspect(ctx, id)
	return err == nil && ci.State != nil && !ci.State.Running && ci.State.ExitCode == code
}
