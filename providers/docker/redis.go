package docker

import (
	"context"
	"fmt"

	redissvc "github.com/sandboxer/sandboxer/services/redis"

	"github.com/docker/go-connections/nat"

	"github.com/sandboxer/sandboxer/state"
)

const redisPort = nat.Port("6379/tcp")

// startRedis starts redis-server with an ACL file (copied in before start,
// so no password is on the command line or in the environment), no
// persistence, and MODULE and DEBUG disabled; loads a module for each
// requested feature that has a configured path and that the image does
// not load by itself (redissvc.LoadModuleArgs); waits for the app user's
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
		"--aclfile", secretPath(redissvc.ACLFileName),
		"--save", "",
		"--appendonly", "no",
		"--enable-module-command", "no",
		"--enable-debug-command", "no",
	}
	cmd = append(cmd, redissvc.LoadModuleArgs(feats, img.Modules, facts.SelfLoaded)...)
	spec := containerSpec{
		Service: "redis",
		Image:   img.Ref,
		Cmd:     cmd,
		Port:    redisPort,
		Tmpfs:   tmpfsMounts(ii),
	}
	files := []containerFile{{Path: secretPath(redissvc.ACLFileName), Content: redissvc.ACLFile(c), Mode: 0o600}}
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
		return redissvc.Ping(ctx, c.Host, c.Port, c.User, c.Password, tlsConf)
	})
	if err != nil {
		return err
	}
	// Available: what this server loaded, and what an earlier Check saw
	// load in this image. A configured module that has not been seen to
	// load is not listed.
	available, err := redissvc.Verify(ctx, c, tlsConf, img.Ref, "docker", feats, p.cat.Allowed("redis"), p.verifiedModules(img, ii.ID))
	if err != nil {
		return err
	}
	b.done("redis", c, available)
	return nil
}
