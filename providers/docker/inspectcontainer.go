package docker

import (
	"context"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/go-connections/nat"
)

// LabelInspect marks the short-lived containers Check makes to find out
// what an image provides. They belong to no sandbox (no lineage), so the
// orphan reaper leaves them alone; Check removes its own, and the next
// Check removes any that a killed run left behind.
const LabelInspect = "dev.sandboxer.inspect"

// staleInspection is how old an inspection container must be before
// another run removes it: older than any inspection takes, so one still
// in use by a concurrent run is never touched.
const staleInspection = 10 * time.Minute

// inspectSpec is an inspection container: no network unless a port is
// published (then the default bridge, on 127.0.0.1), the same limits and
// security options as a sandbox's containers.
type inspectSpec struct {
	Image string
	Cmd   []string
	Port  nat.Port // "" for none
	Tmpfs map[string]string
}

// createInspection creates (does not start) an inspection container and
// returns its id and a function that removes it, on a fresh context so an
// interrupted Check still cleans up.
func (p *Provider) createInspection(ctx context.Context, spec inspectSpec) (string, func(), error) {
	p.removeStaleInspections(ctx)
	cfg := &container.Config{
		Image:  spec.Image,
		Cmd:    spec.Cmd,
		Labels: map[string]string{LabelInspect: "true"},
	}
	host := &container.HostConfig{
		NetworkMode: "none",
		SecurityOpt: []string{"no-new-privileges"},
		Tmpfs:       spec.Tmpfs,
	}
	if spec.Port != "" {
		cfg.ExposedPorts = nat.PortSet{spec.Port: struct{}{}}
		host.NetworkMode = "bridge" // the default bridge: a throwaway server needs no lineage network
		host.PortBindings = nat.PortMap{spec.Port: []nat.PortBinding{{HostIP: loopback}}}
	}
	if p.cfg.MemoryMB > 0 {
		host.Memory = p.cfg.MemoryMB * 1024 * 1024
	}
	if p.cfg.PidsLimit > 0 {
		limit := p.cfg.PidsLimit
		host.PidsLimit = &limit
	}
	// Not cancelled mid-flight, for the reason given in createContainer.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	resp, err := p.cli.ContainerCreate(cctx, cfg, host, nil, nil, "")
	if err != nil {
		return "", nil, p.engineErr("create a container to inspect image "+spec.Image, err)
	}
	remove := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = p.removeContainer(rctx, resp.ID)
	}
	if err := ctx.Err(); err != nil {
		remove()
		return "", nil, err
	}
	return resp.ID, remove, nil
}

// removeStaleInspections removes inspection containers a killed run left
// behind. Best effort: a failure here must not fail the inspection.
func (p *Provider) removeStaleInspections(ctx context.Context) {
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelInspect+"=true"))})
	if err != nil {
		return
	}
	for _, c := range cs {
		if time.Since(time.Unix(c.Created, 0)) > staleInspection {
			_ = p.removeContainer(ctx, c.ID)
		}
	}
}
