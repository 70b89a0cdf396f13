package docker

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docker/go-connections/nat"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/sandboxer/sandboxer/state"
)

const redisPort = nat.Port("6379/tcp")

// redisModuleNames returns the names a feature's module reports in INFO
// modules / MODULE LIST (older RediSearch builds report "ft").
func redisModuleNames(feature string) []string {
	switch feature {
	case "search":
		return []string{"search", "ft"}
	case "json":
		return []string{"ReJSON"}
	case "bloom":
		return []string{"bf"}
	}
	return nil
}

// startRedis starts redis-server with an ACL file (copied in before start,
// so no password is on the command line or in the environment), no
// persistence, and MODULE and DEBUG disabled; loads a module for each
// requested feature that has a configured path and that the image does
// not load by itself (loadModuleArgs); waits for the app user's
// AUTH + PING; then checks every requested feature's module is loaded.
func (p *Provider) startRedis(ctx context.Context, b *build, feats []string, c state.Credentials) error {
	img := b.images["redis"]
	ii, err := p.inspectImage(ctx, "redis", img.Ref)
	if err != nil {
		return err
	}
	facts, err := p.imageFacts(ctx, "redis", img, ii)
	if err != nil {
		return err
	}
	cmd := []string{"redis-server",
		"--aclfile", secretPath(aclFileName),
		"--save", "",
		"--appendonly", "no",
		"--enable-module-command", "no",
		"--enable-debug-command", "no",
	}
	cmd = append(cmd, loadModuleArgs(feats, img.Modules, facts.SelfLoaded)...)
	spec := containerSpec{
		Service: "redis",
		Image:   img.Ref,
		Cmd:     cmd,
		Port:    redisPort,
		Tmpfs:   tmpfsMounts(ii),
	}
	files := []containerFile{{Path: secretPath(aclFileName), Content: aclFile(c), Mode: 0o600}}
	if t := b.reach.tls; t != nil {
		spec.Cmd = append(spec.Cmd, redisTLSArgs()...)
		files = append(files, t.files()...)
	}
	tlsConf, err := clientTLS(c, c.Host)
	if err != nil {
		return err
	}
	id, name, err := p.createContainer(ctx, b, spec)
	if err != nil {
		return err
	}
	// The file holds only SHA-256 hashes of the passwords.
	if err := p.copyFiles(ctx, id, facts.Owner, files...); err != nil {
		return fmt.Errorf("copy ACL file into %s: %w", name, err)
	}
	port, err := p.startContainer(ctx, b, "redis", id, name, redisPort)
	if err != nil {
		return err
	}
	c.Port = port
	err = p.waitReady(ctx, id, p.readyTimeout(), func(ctx context.Context) error {
		return redisPing(ctx, c.Host, c.Port, c.User, c.Password, tlsConf)
	})
	if err != nil {
		return err
	}
	// One admin connection for the module checks and the ACL hardening.
	admin := redisClient(c.Host, c.Port, c.AdminUser, c.AdminPassword, tlsConf)
	defer admin.Close()
	loadedVersions, err := redisModuleVersions(ctx, admin)
	if err != nil {
		return fmt.Errorf("list loaded modules as admin: %w", err)
	}
	loaded := sortedKeys(loadedVersions)
	// Available: what this server loaded, and what an earlier Check saw
	// load in this image (a request for it is then a replace that works).
	// A configured module that has not been seen to load is not listed.
	available := map[string]string{}
	for f, v := range p.verifiedModules(img, ii.ID) {
		available[f] = v
	}
	for _, f := range p.cat.Allowed("redis") {
		if v, ok := moduleVersion(loadedVersions, f); ok {
			available[f] = v
		}
	}
	for _, f := range feats {
		if _, ok := moduleVersion(loadedVersions, f); !ok {
			return fmt.Errorf("redis image %q does not provide feature %q: module %s is not loaded (loaded modules: %s); "+
				"set provider \"docker\" { image \"redis\" { modules = { %s = \"/path/to/module.so\" } } } or use an image that bundles it",
				img.Ref, f, strings.Join(redisModuleNames(f), "/"), listOrNone(loaded), f)
		}
	}
	if _, err := restrictModuleCommands(ctx, admin, c.User, loaded); err != nil {
		return err
	}
	b.done("redis", c, available)
	return nil
}

// loadModuleArgs are the --loadmodule arguments for the requested
// features: one per feature with a configured module path, except those
// whose module the image loads by itself (selfLoaded, seen by the image's
// inspection: redis:8's entrypoint loads every module it ships). Loading
// a module twice aborts start-up, whatever the paths, so a configured
// path for such a feature is not used. A feature without a path is
// expected to be built in.
func loadModuleArgs(feats []string, modules map[string]string, selfLoaded []string) []string {
	var args []string
	for _, f := range feats {
		if path := modules[f]; path != "" && !slices.Contains(selfLoaded, f) {
			args = append(args, "--loadmodule", path)
		}
	}
	return args
}

// redisClient is a single-connection client that fails fast: no retries,
// no client-identity or maintenance-notification handshakes (they would
// only add round trips and log noise to a probe). DialerRetries 1: by
// default a refused dial is retried 5 times, 100 ms apart, inside one
// command, so a probe just after start (or of a dead container) would take
// 400 ms to fail instead of a millisecond.
//
// tlsConf nil means plain TCP; otherwise TLS, verified as tlsConf says.
func redisClient(host string, port int, user string, password state.Secret, tlsConf *tls.Config) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     fmt.Sprintf("%s:%d", host, port),
		Username:                 user,
		Password:                 password.Reveal(),
		Protocol:                 2, // plain AUTH, then commands
		DisableIdentity:          true,
		MaxRetries:               -1,
		PoolSize:                 1,
		DialTimeout:              2 * time.Second,
		DialerRetries:            1,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		TLSConfig:                tlsConf,
	})
}

// redisPing is the readiness and liveness probe: AUTH as user, then PING.
func redisPing(ctx context.Context, host string, port int, user string, password state.Secret, tlsConf *tls.Config) error {
	rdb := redisClient(host, port, user, password, tlsConf)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("AUTH %s + PING: %w", user, err)
	}
	return nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
