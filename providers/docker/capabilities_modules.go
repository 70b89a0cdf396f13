package docker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	redissvc "github.com/sandboxer/sandboxer/services/redis"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/go-connections/nat"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
)

// moduleCapabilities finds which allowed features an image of a service
// whose features are Redis-style modules (services.ModuleLoader: Redis,
// Valkey) can provide by loading them, not by looking for files: a module
// file can be missing, built for another server or another CPU, and a
// module the image loads by itself (redis:8, valkey-bundle) has no
// configured path. It starts the image the way a sandbox starts it (so an
// entrypoint that adds --loadmodule does so here too), reads which modules
// are loaded, then MODULE LOADs each configured module that is not, and
// keeps the versions the server reports. The server is throwaway: its
// admin is the only user, MODULE is enabled for it, and the container is
// removed before returning.
func (p *Provider) moduleCapabilities(ctx context.Context, s services.Service, ml services.ModuleLoader, img config.Image, ii image.InspectResponse) (imageFacts, error) {
	ref := img.Ref
	svc := s.Name()
	creds, err := p.newCredentials([]string{svc}, "")
	if err != nil {
		return imageFacts{}, err
	}
	c := creds[svc]
	st := ml.InspectStart(c, secretDir)
	port := nat.Port(fmt.Sprintf("%d/tcp", s.Port()))
	id, remove, err := p.createInspection(ctx, inspectSpec{
		Image: ref,
		Cmd:   st.Args,
		Port:  port,
		Tmpfs: tmpfsMounts(ii),
	})
	if err != nil {
		return imageFacts{}, err
	}
	defer remove()
	owner, err := p.readOwner(ctx, id, svc, ii)
	if err != nil {
		return imageFacts{}, err
	}
	var files []containerFile
	for _, name := range slices.Sorted(maps.Keys(st.Files)) {
		files = append(files, containerFile{Path: secretPath(name), Content: st.Files[name], Mode: 0o600})
	}
	if err := p.copyFiles(ctx, id, owner, files...); err != nil {
		return imageFacts{}, fmt.Errorf("copy ACL file: %w", err)
	}
	if err := p.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return imageFacts{}, p.engineErr("start a container to inspect image "+ref, err)
	}
	ci, err := p.cli.ContainerInspect(ctx, id)
	if err != nil {
		return imageFacts{}, p.engineErr("inspect container", err)
	}
	if c.Port, err = publishedPort(ci, port); err != nil {
		return imageFacts{}, err
	}
	err = p.waitReady(ctx, id, p.readyTimeout(), func(ctx context.Context) error {
		return redissvc.Ping(ctx, c.Host, c.Port, c.AdminUser, c.AdminPassword, nil)
	})
	if err != nil {
		return imageFacts{}, fmt.Errorf("the %s server of image %s did not start: %w", svc, ref, err)
	}
	admin := redissvc.Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, nil)
	defer admin.Close()
	ic := plan.ImageCapabilities{Features: map[string]string{}, Hint: ml.ModulesHint("docker")}
	loaded, err := redissvc.ModuleVersions(ctx, admin)
	if err != nil {
		return imageFacts{}, fmt.Errorf("list loaded modules: %w", err)
	}
	facts := imageFacts{Owner: owner}
	for _, f := range p.cat.Allowed(svc) {
		if _, ok := ml.FeatureVersion(loaded, f); ok {
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
	for _, f := range p.cat.Allowed(svc) {
		if v, ok := ml.FeatureVersion(loaded, f); ok {
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
