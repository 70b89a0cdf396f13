package docker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	redissvc "github.com/sandboxer/sandboxer/services/redis"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/go-connections/nat"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// redisPort is the port of the inspection container (the image's).
const redisPort = nat.Port("6379/tcp")

// redisCapabilities finds which allowed features a redis image can
// provide by loading them, not by looking for files: a module file can be
// missing, built for another Redis or another CPU, and a module the image
// loads by itself (redis:8) has no configured path. It starts the image
// the way a sandbox starts it (so an entrypoint that adds --loadmodule does
// so here too), reads which modules are loaded, then MODULE LOADs each
// configured module that is not, and keeps the versions the server reports.
// The server is throwaway: its admin is the only user, MODULE is enabled
// for it, and the container is removed before returning.
func (p *Provider) redisCapabilities(ctx context.Context, img config.Image, ii image.InspectResponse) (imageFacts, error) {
	ref := img.Ref
	creds, err := p.newCredentials([]string{"redis"}, "")
	if err != nil {
		return imageFacts{}, err
	}
	c := creds["redis"]
	id, remove, err := p.createInspection(ctx, inspectSpec{
		Image: ref,
		Cmd: []string{"redis-server",
			"--aclfile", secretPath(redissvc.ACLFileName),
			"--save", "", "--appendonly", "no",
			"--enable-module-command", "yes",
			"--enable-debug-command", "no",
		},
		Port:  redisPort,
		Tmpfs: tmpfsMounts(ii),
	})
	if err != nil {
		return imageFacts{}, err
	}
	defer remove()
	owner, err := p.readOwner(ctx, id, "redis", ii)
	if err != nil {
		return imageFacts{}, err
	}
	if err := p.copyFiles(ctx, id, owner, containerFile{Path: secretPath(redissvc.ACLFileName), Content: redissvc.ACLFile(c), Mode: 0o600}); err != nil {
		return imageFacts{}, fmt.Errorf("copy ACL file: %w", err)
	}
	if err := p.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return imageFacts{}, p.engineErr("start a container to inspect image "+ref, err)
	}
	ci, err := p.cli.ContainerInspect(ctx, id)
	if err != nil {
		return imageFacts{}, p.engineErr("inspect container", err)
	}
	if c.Port, err = publishedPort(ci, redisPort); err != nil {
		return imageFacts{}, err
	}
	err = p.waitReady(ctx, id, p.readyTimeout(), func(ctx context.Context) error {
		return redissvc.Ping(ctx, c.Host, c.Port, c.AdminUser, c.AdminPassword, nil)
	})
	if err != nil {
		return imageFacts{}, fmt.Errorf("redis-server of image %s did not start: %w", ref, err)
	}
	admin := redissvc.Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, nil)
	defer admin.Close()
	ic := plan.ImageCapabilities{Features: map[string]string{},
		Hint: `set provider "docker" { image "redis" { modules = { FEATURE = "/path/to/module.so" } } } to a module the image has, or use an image that bundles it (redis:8)`}
	loaded, err := redissvc.ModuleVersions(ctx, admin)
	if err != nil {
		return imageFacts{}, fmt.Errorf("list loaded modules: %w", err)
	}
	facts := imageFacts{Owner: owner}
	for _, f := range p.cat.Allowed("redis") {
		if _, ok := redissvc.ModuleVersion(loaded, f); ok {
			facts.SelfLoaded = append(facts.SelfLoaded, f)
			continue
		}
		path := img.Modules[f]
		if path == "" {
			continue
		}
		if err := admin.Do(ctx, "MODULE", "LOAD", path).Err(); err != nil {
			if ic.Unusable == nil {
				ic.Unusable = map[string]string{}
			}
			ic.Unusable[f] = p.moduleLoadError(ctx, id, path, err)
		}
	}
	if loaded, err = redissvc.ModuleVersions(ctx, admin); err != nil {
		return imageFacts{}, fmt.Errorf("list loaded modules: %w", err)
	}
	for _, f := range p.cat.Allowed("redis") {
		if v, ok := redissvc.ModuleVersion(loaded, f); ok {
			ic.Features[f] = v
			delete(ic.Unusable, f)
		}
	}
	facts.ImageCapabilities = ic
	return facts, nil
}

// publishedPort returns the host port the engine picked for port on
// 127.0.0.1.
func publishedPort(ci container.InspectResponse, port nat.Port) (int, error) {
	if ci.NetworkSettings != nil {
		for _, b := range ci.NetworkSettings.Ports[port] {
			if b.HostIP == loopback && b.HostPort != "" {
				return strconv.Atoi(b.HostPort)
			}
		}
	}
	if ci.State != nil && !ci.State.Running {
		return 0, fmt.Errorf("%w during start with code %d", errExited, ci.State.ExitCode)
	}
	return 0, fmt.Errorf("no host port published for %s", port)
}

// moduleLoadError explains a failed MODULE LOAD: the reply only says to
// read the server log, so the log line that names the module is quoted.
// Redis writes that line before it replies, but the engine copies the
// container's output to its log asynchronously, so on a busy machine the
// line can arrive a moment after the reply: the log is read again for a
// short while before falling back to the bare reply.
func (p *Provider) moduleLoadError(ctx context.Context, id, path string, err error) string {
	deadline := time.Now().Add(moduleLogWait)
	for {
		if lines := moduleLogLines(p.logTail(ctx, id, 20), path); len(lines) > 0 {
			return strings.Join(lines, "; ")
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Sprintf("module %s does not load: %v", path, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// moduleLogWait bounds how long moduleLoadError waits for the log line.
const moduleLogWait = 3 * time.Second

// moduleLogLines picks the lines of a redis log that speak of the module
// at path, without their "1:M 01 Dec 2026 03:25:12.345 # " prefix.
func moduleLogLines(tail, path string) []string {
	var lines []string
	for _, line := range strings.Split(tail, "\n") {
		if !strings.Contains(line, path) {
			continue
		}
		if i := strings.Index(line, "# "); i >= 0 {
			line = line[i+2:]
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	return lines
}
