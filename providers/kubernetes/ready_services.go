package kubernetes

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	admin := redissvc.Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, tlsConf)
	defer admin.Close()
	loadedVersions, err := redissvc.ModuleVersions(ctx, admin)
	if err != nil {
		return fmt.Errorf("list loaded modules as admin: %w", err)
	}
	loaded := slices.Sorted(maps.Keys(loadedVersions))
	// Available: what this server loaded, and what the image's inspection
	// saw load (a request for it is then a replace that works).
	available := map[string]string{}
	for f, v := range b.facts[redissvc.Name].Features {
		available[f] = v
	}
	for _, f := range p.cat.Allowed(redissvc.Name) {
		if v, ok := redissvc.ModuleVersion(loadedVersions, f); ok {
			available[f] = v
		}
	}
	for _, f := range feats {
		if _, ok := redissvc.ModuleVersion(loadedVersions, f); !ok {
			return fmt.Errorf("redis image %q does not provide feature %q: module %s is not loaded (loaded modules: %s); "+
				"set provider \"kubernetes\" { image \"redis\" { modules = { %s = \"/path/to/module.so\" } } } or use an image that bundles it",
				img.Ref, f, strings.Join(redissvc.ModuleNames(f), "/"), listOrNone(loaded), f)
		}
	}
	if _, err := redissvc.RestrictModuleCommands(ctx, admin, c.User, loaded); err != nil {
		return err
	}
	b.done(redissvc.Name, c, available)
	return nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
