package docker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-connections/nat"
)

// loopback is the host address ports are published on unless the provider
// says otherwise (publish_address).
const loopback = "127.0.0.1"

// containerSpec is what differs between services; everything else about a
// container (limits, security, publishing, labels) is the same for all.
type containerSpec struct {
	Service string
	Image   string
	Env     []string
	Cmd     []string
	Port    nat.Port          // container port to publish, e.g. "5432/tcp"
	Tmpfs   map[string]string // path → mount options
	// Volumes are paths that get an anonymous volume labelled like the
	// container: removed with it, and found by label if it is not.
	Volumes []string
	// User, Entrypoint: the container's user and entrypoint when not the
	// image's (a PostgreSQL sandbox started from a template, pgtemplate.go).
	User       string
	Entrypoint []string
	// Mounts are further mounts as they are (a template, pgtemplate.go).
	Mounts []mount.Mount
}

// createContainer creates (does not start) one service's container, records
// it in b so a failure can remove it, and returns its id and name.
func (p *Provider) createContainer(ctx context.Context, b *build, spec containerSpec) (id, name string, err error) {
	name = containerName(b.req.Lineage, b.req.Address, b.req.Generation, spec.Service)
	cfg := &container.Config{
		Image:        spec.Image,
		Env:          spec.Env,
		Cmd:          spec.Cmd,
		Hostname:     spec.Service,
		ExposedPorts: nat.PortSet{spec.Port: struct{}{}},
		Labels:       serviceLabels(b.req.Address, b.req.Lineage, b.req.Generation, spec.Service),
		User:         spec.User,
		Entrypoint:   spec.Entrypoint,
	}
	host := &container.HostConfig{
		PortBindings: nat.PortMap{spec.Port: []nat.PortBinding{{HostIP: publishAddress(b), HostPort: ""}}},
		Privileged:   false,
		SecurityOpt:  []string{"no-new-privileges"},
		Tmpfs:        spec.Tmpfs,
		AutoRemove:   false, // a crashed container must stay so its log can be read
	}
	for _, path := range spec.Volumes {
		host.Mounts = append(host.Mounts, mount.Mount{
			Type:          mount.TypeVolume,
			Target:        path,
			VolumeOptions: &mount.VolumeOptions{Labels: cfg.Labels},
		})
	}
	host.Mounts = append(host.Mounts, spec.Mounts...)
	if p.cfg.MemoryMB > 0 {
		host.Memory = p.cfg.MemoryMB * 1024 * 1024
	}
	if p.cfg.PidsLimit > 0 {
		limit := p.cfg.PidsLimit
		host.PidsLimit = &limit
	}
	// Not cancelled mid-flight: the engine finishes a create whose request
	// was abandoned, and the container would appear after cleanup ran.
	// Letting the call return means the id is known and cleanup removes it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	var resp container.CreateResponse
	// By name: a start after the network was removed and made again
	// (see onNetwork) resolves the new one.
	host.NetworkMode = container.NetworkMode(lineageNetworkName(b.req.Lineage))
	err = p.onNetwork(cctx, b, func() error {
		var err error
		resp, err = p.cli.ContainerCreate(cctx, cfg, host, nil, nil, name)
		return err
	})
	if err != nil {
		return "", "", p.engineErr("create container "+name, err)
	}
	b.addContainer(spec.Service, resp.ID, name)
	if p.afterContainerCreate != nil {
		p.afterContainerCreate(spec.Service)
	}
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	return resp.ID, name, nil
}

// startContainer starts a created container, lets the services ranked
// after it begin (see services.StartRank), and returns the host port the engine
// picked for port.
func (p *Provider) startContainer(ctx context.Context, b *build, service, id, name string, port nat.Port) (int, error) {
	if err := p.attachUserNetworks(ctx, b, id, name); err != nil {
		return 0, err
	}
	err := p.onNetwork(ctx, b, func() error {
		return p.cli.ContainerStart(ctx, id, container.StartOptions{})
	})
	b.starts.pass(service)
	if err != nil {
		return 0, p.engineErr("start container "+name, err)
	}
	ci, err := p.cli.ContainerInspect(ctx, id)
	if err != nil {
		return 0, p.engineErr("inspect container "+name, err)
	}
	publishAddr := publishAddress(b)
	if ci.NetworkSettings != nil {
		for _, b := range ci.NetworkSettings.Ports[port] {
			if b.HostIP == publishAddr && b.HostPort != "" {
				return strconv.Atoi(b.HostPort)
			}
		}
	}
	if ci.State != nil && !ci.State.Running {
		return 0, fmt.Errorf("%w during start with code %d", errExited, ci.State.ExitCode)
	}
	return 0, fmt.Errorf("container %s has no host port published for %s", name, port)
}

// removeContainer force-removes a container with its anonymous volumes; one
// already gone counts as removed. One whose removal another caller started
// (the engine refuses a second with a conflict: a process killed while it
// released the container, whose request the engine goes on with) counts as
// removed once that removal ends: it waits until the container is gone,
// at most removalWait, and tries again if it is still there then.
func (p *Provider) removeContainer(ctx context.Context, id string) error {
	err := p.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	if !removalInProgress(err) {
		return p.engineErr("remove container", err)
	}
	wctx, cancel := context.WithTimeout(ctx, removalWait)
	defer cancel()
	for {
		if _, ierr := p.cli.ContainerInspect(wctx, id); cerrdefs.IsNotFound(ierr) {
			return nil
		}
		select {
		case <-wctx.Done():
			// Still there: its removal failed or stalls; one more of ours.
			err := p.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
			if err == nil || cerrdefs.IsNotFound(err) {
				return nil
			}
			return p.engineErr("remove container", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removalWait bounds how long removeContainer waits for another caller's
// removal of the same container.
const removalWait = 30 * time.Second

// removalInProgress reports the engine's refusal of a removal because one
// is under way ("removal of container … is already in progress", a 409).
func removalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}
