package docker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	// One admin connection for the module checks and the ACL hardening.
	admin := redissvc.Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, tlsConf)
	defer admin.Close()
	loadedVersions, err := redissvc.ModuleVersions(ctx, admin)
	if err != nil {
		return fmt.Errorf("list loaded modules as admin: %w", err)
	}
	loaded := slices.Sorted(maps.Keys(loadedVersions))
	// Available: what this server loaded, and what an earlier Check saw
	// load in this image (a request for it is then a replace that works).
	// A configured module that has not been seen to load is not listed.
	available := map[string]string{}
	for f, v := range p.verifiedModules(img, ii.ID) {
		available[f] = v
	}
	for _, f := range p.cat.Allowed("redis") {
		if v, ok := redissvc.ModuleVersion(loadedVersions, f); ok {
			available[f] = v
		}
	}
	for _, f := range feats {
		if _, ok := redissvc.ModuleVersion(loadedVersions, f); !ok {
			return fmt.Errorf("redis image %q does not provide feature %q: module %s is not loaded (loaded modules: %s); "+
				"set provider \"docker\" { image \"redis\" { modules = { %s = \"/path/to/module.so\" } } } or use an image that bundles it",
				img.Ref, f, strings.Join(redissvc.ModuleNames(f), "/"), listOrNone(loaded), f)
		}
	}
	if _, err := redissvc.RestrictModuleCommands(ctx, admin, c.User, loaded); err != nil {
		return err
	}
	b.done("redis", c, available)
	return nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
