package kubernetes

import (
	"context"
	"crypto/tls"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/config"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/state"
)

// postgresReady waits for the app role's login and SELECT 1 on the pod's
// IP (the image's init server listens on the socket only, so an answer
// over TCP comes from the real server, after the init script ran), then
// checks the extensions on that connection.
func (p *Provider) postgresReady(ctx context.Context, b *build, c state.Credentials, tlsConf *tls.Config, img config.Image, feats []string) error {
	var conn *pgx.Conn
	if err := pollReady(ctx, func(ctx context.Context) error {
		var err error
		conn, err = pgsvc.Ready(ctx, c, tlsConf)
		return err
	}); err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	available, err := pgsvc.Verify(ctx, conn, img.Ref, c.Database, feats, p.cat.Allowed(pgsvc.Name))
	if err != nil {
		return err
	}
	b.done(pgsvc.Name, c, available)
	return nil
}

// redisReady waits for the app user's AUTH + PING, checks every requested
// feature's module is loaded and denies the app user the modules'
// administrative commands (services/redis).
func (p *Provider) redisReady(ctx context.Context, b *build, c state.Credentials, tlsConf *tls.Config, img config.Image, feats []string) error {
	if err := pollReady(ctx, func(ctx context.Context) error {
		return redissvc.Ping(ctx, c.Host, c.Port, c.User, c.Password, tlsConf)
	}); err != nil {
		return err
	}
	// Available: what this server loaded, and what the image's
	// inspection saw load.
	available, err := redissvc.Verify(ctx, c, tlsConf, img.Ref, "kubernetes", feats, p.cat.Allowed(redissvc.Name), b.facts[redissvc.Name].Features)
	if err != nil {
		return err
	}
	b.done(redissvc.Name, c, available)
	return nil
}
