package docker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
)

// All sandboxes of one state lineage share one bridge network, created with
// inter-container communication disabled. A network per sandbox would take
// one of the engine's address pools each (about 31 by default, shared with
// everything else on the engine), so an apply of 30 sandboxes failed; one
// per lineage takes one pool however many sandboxes run. With ICC off the
// kernel drops traffic between any two containers on the bridge, so a
// container of one sandbox still cannot reach another's ports, nor even its
// own sibling service (no sandbox needs that). Published ports are
// unaffected: they are reached through the host.
//
// The network is made on demand by the first Create of the lineage and
// removed by whichever Delete, cleanup or reap leaves no container of the
// lineage behind. Creates are serialised across processes by an engine
// lock (enginelock.go): the engine does not refuse a second network of the
// same name reliably, and containers join the network by name, which is
// ambiguous once two exist. A remove may still race a create: the create
// then finds the network gone and makes it again (onNetwork), and the
// remove never takes a network a container of the lineage was made on
// before its check (removeNetworkIfUnused).

// ensureNetwork returns the id of the lineage's network, creating it when
// there is none. Concurrent calls in this process share one engine round
// trip; concurrent calls from several processes are serialised by an
// engine lock (enginelock.go), so exactly one network is ever made.
func (p *Provider) ensureNetwork(ctx context.Context, lineage string) (string, error) {
	ch := p.nets.DoChan(lineage, func() (any, error) {
		// Not cancelled with the first caller's context: other callers
		// share the result, and a create the engine finishes anyway should
		// be known rather than abandoned.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
		defer cancel()
		id, err := p.findNetwork(cctx, lineage)
		if err != nil || id != "" {
			return id, err
		}
		return p.createNetworkOnce(cctx, lineage)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		// Wait for the lookup or create in flight (bounded by
		// createTimeout): returning at once would let the caller's
		// cleanup look for the network before a create that is still
		// running makes it, and leave it behind.
		<-ch
		return "", ctx.Err()
	}
}

// findNetwork returns the lineage's network, found by its labels; "" when
// there is none. Two can exist only if made by a sandboxer before the
// engine lock, or by hand; then every start by name is ambiguous, so all
// but the lowest id are removed unless in use.
func (p *Provider) findNetwork(ctx context.Context, lineage string) (string, error) {
	ids, err := p.lineageNetworks(ctx, lineage)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	for _, extra := range ids[1:] {
		if err := p.removeNetwork(ctx, extra); err != nil && !inUse(err) {
			return "", err
		}
	}
	return ids[0], nil
}

// lineageNetworks lists the ids of the lineage's networks, sorted.
func (p *Provider) lineageNetworks(ctx context.Context, lineage string) ([]string, error) {
	f := filters.NewArgs()
	for k, v := range lineageNetworkLabels(lineage) {
		f.Add("label", k+"="+v)
	}
	ns, err := p.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, p.engineErr("list networks", err)
	}
	ids := make([]string, 0, len(ns))
	for _, n := range ns {
		ids = append(ids, n.ID)
	}
	sort.Strings(ids)
	return ids, nil
}

// createNetworkOnce makes the lineage's network under the lineage's engine
// lock, unless a process that held the lock before made it already.
func (p *Provider) createNetworkOnce(ctx context.Context, lineage string) (string, error) {
	unlock, err := p.lockLineage(ctx, lineage, "network")
	if err != nil {
		return "", err
	}
	defer unlock()
	id, err := p.findNetwork(ctx, lineage)
	if err != nil || id != "" {
		return id, err
	}
	return p.createNetwork(ctx, lineage)
}

// createNetwork makes the lineage's network; the caller holds the lineage's
// network lock. Its default host binding address is 127.0.0.1, so even a
// port published without an explicit address would stay on loopback.
func (p *Provider) createNetwork(ctx context.Context, lineage string) (string, error) {
	name := lineageNetworkName(lineage)
	resp, err := p.cli.NetworkCreate(ctx, name, network.CreateOptions{
		Driver: "bridge",
		Labels: lineageNetworkLabels(lineage),
		Options: map[string]string{
			"com.docker.network.bridge.enable_icc":        "false",
			"com.docker.network.bridge.host_binding_ipv4": loopback,
		},
	})
	switch {
	case err == nil:
		return resp.ID, nil
	case cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "already exists"):
		// Under the lock, and findNetwork saw none of ours: the name is
		// taken by a network without this lineage's labels.
		return "", fmt.Errorf("create network %s: a network of that name exists but is not labelled as this lineage's; remove or rename it", name)
	case strings.Contains(err.Error(), "non-overlapping IPv4 address pool"):
		return "", fmt.Errorf("create network %s: the engine has no free address pool for another network "+
			"(sandboxer needs one per state lineage; remove unused networks or widen default-address-pools in daemon.json): %w", name, err)
	default:
		return "", p.engineErr("create network "+name, err)
	}
}

// networkGone reports whether an engine error says the network a
// container was given no longer exists: a Delete or reap of the same
// lineage removed it between our ensureNetwork and the container's create
// or start (the engine removes a network that only created, not running,
// containers are attached to).
func networkGone(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "network") && strings.Contains(s, "not found")
}

// onNetwork runs op (a container create or start) and, when it fails
// because the lineage network was removed meanwhile, makes the network
// again and retries. Containers name the network by name, not id, so a
// start resolves the recreated network too. Bounded: each retry needs
// another remover to win the race again.
func (p *Provider) onNetwork(ctx context.Context, b *build, op func() error) error {
	const attempts = 4
	var err error
	for range attempts {
		if err = op(); !networkGone(err) {
			return err
		}
		id, nerr := p.ensureNetwork(ctx, b.req.Lineage)
		if nerr != nil {
			return errors.Join(err, nerr)
		}
		b.mu.Lock()
		b.netID = id
		b.mu.Unlock()
	}
	return err
}

// removeNetworkIfUnused removes the lineage's network once no container of
// the lineage exists, running or not. A container made after that check
// keeps the network anyway when it is running ("has active endpoints" is
// then not an error), and one not started yet finds it again through
// onNetwork. Already gone counts as removed.
func (p *Provider) removeNetworkIfUnused(ctx context.Context, lineage string) error {
	if lineage == "" {
		return nil
	}
	ids, err := p.lineageNetworks(ctx, lineage)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, p.removeSharedNetwork(ctx, lineage, id))
	}
	return errors.Join(errs...)
}

// lineageHasContainers reports whether any container, running or not,
// carries the lineage.
func (p *Provider) lineageHasContainers(ctx context.Context, lineage string) (bool, error) {
	f := filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"),
		filters.Arg("label", LabelLineage+"="+lineage),
	)
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Limit: 1, Filters: f})
	if err != nil {
		return false, p.engineErr("list containers", err)
	}
	return len(cs) > 0, nil
}

// removeSharedNetwork removes a lineage network (listed as unused a moment
// ago) unless a container of the lineage exists by now: one of a
// concurrent Create, created or running.
func (p *Provider) removeSharedNetwork(ctx context.Context, lineage, id string) error {
	if lineage != "" {
		busy, err := p.lineageHasContainers(ctx, lineage)
		if err != nil || busy {
			return err
		}
	}
	err := p.removeNetwork(ctx, id)
	if err != nil && inUse(err) {
		return nil
	}
	return err
}

// inUse reports the engine's refusal to remove a network that still has
// containers attached.
func inUse(err error) bool {
	return strings.Contains(err.Error(), "active endpoints")
}

// removeNetwork removes a network; one already gone counts as removed.
func (p *Provider) removeNetwork(ctx context.Context, id string) error {
	err := p.cli.NetworkRemove(ctx, id)
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	return p.engineErr("remove network", err)
}
