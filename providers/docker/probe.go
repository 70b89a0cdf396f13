package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/state"
)

// Probe checks that every service of a recorded instance has its container
// running and answers a protocol probe with the handed-out credentials
// (PostgreSQL SELECT 1, Redis AUTH + PING). A container that no longer
// exists gives an error wrapping apply.ErrNotFound.
func (p *Provider) Probe(ctx context.Context, rec *state.Record) error {
	if rec == nil {
		return errors.New("probe: no record")
	}
	var scrub scrubber
	for _, c := range rec.Credentials {
		scrub.add(c.Password, c.AdminPassword)
	}
	for _, svc := range sortedKeys(rec.Credentials) {
		if err := p.probeService(ctx, rec, svc); err != nil {
			return scrub.err(fmt.Errorf("probe %s: %s: %w", rec.Address, svc, err))
		}
	}
	return nil
}

func (p *Provider) probeService(ctx context.Context, rec *state.Record, svc string) error {
	id := rec.Resources.Containers[svc]
	if id == "" {
		return fmt.Errorf("no container recorded: %w", apply.ErrNotFound)
	}
	ci, err := p.cli.ContainerInspect(ctx, id)
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("container %s: %w", shortID(id), apply.ErrNotFound)
	}
	if err != nil {
		return p.engineErr("inspect container "+shortID(id), err)
	}
	if ci.State == nil || !ci.State.Running {
		status, code := "not running", 0
		if ci.State != nil {
			status, code = ci.State.Status, ci.State.ExitCode
		}
		return fmt.Errorf("container %s is %s (exit code %d)", trimSlash(ci.Name), status, code)
	}
	pctx, cancel := context.WithTimeout(ctx, p.probeTimeout())
	defer cancel()
	c := rec.Credentials[svc]
	switch svc {
	case "postgres":
		return pgPing(pctx, c.Host, c.Port, c.User, c.Password, c.Database)
	case "redis":
		return redisPing(pctx, c.Host, c.Port, c.User, c.Password)
	default:
		return fmt.Errorf("service %s is not supported by the docker provider", svc)
	}
}
