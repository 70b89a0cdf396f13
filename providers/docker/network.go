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
// lineage behind. Those two can race between processes; see ensureNetwork
// and removeNetworkIfUnused for how neither breaks the other.

// ensureNetwork returns the id of the lineage's network, creating it when
// there is none. Concurrent calls in this process share one engine round
// trip; concurrent calls from several processes converge on one network
// (see createNetwork).
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
		return p.createNetwork(cctx, lineage)
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
// there is none. Should two exist (engines before API 1.44 check names for
// duplicates only on a best-effort basis), every process picks the same
// one, the lowest id.
func (p *Provider) findNetwork(ctx context.Context, lineage string) (string, error) {
	ids, err := p.lineageNetworks(ctx, lineage)
	if err != nil || len(ids) == 0 {
		return "", err
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

// createNetwork makes the lineage's network. Its default host binding
// address is 127.0.0.1, so even a port published without an explicit
// address would stay on loopback. A name conflict means another process
// made it first, which is fine: that one is used.
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
	case cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "already exists"):
		id, ferr := p.findNetwork(ctx, lineage)
		if ferr != nil {
			return "", ferr
		}
		if id == "" {
			return "", fmt.Errorf("create network %s: a network of that name exists but is not labelled as this lineage's; remove or rename it", name)
		}
		return id, nil
	case strings.Contains(err.Error(), "non-overlapping IPv4 address pool"):
		return "", fmt.Errorf("create network %s: the engine has no free address pool for another network "+
			"(sandboxer needs one per state lineage; remove unused networks or widen default-address-pools in daemon.json): %w", name, err)
	default:
		return "", p.engineErr("create network "+name, err)
	}
	// Converge on the lowest id should a racing process have made a
	// duplicate; ours, being empty yet, is removed if it lost.
	id, err := p.findNetwork(ctx, lineage)
	if err != nil {
		return "", err
	}
	if id != resp.ID && id != "" {
		_ = p.cli.NetworkRemove(ctx, resp.ID) // unused; a leftover is swept with the lineage
		return id, nil
	}
	return resp.ID, nil
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
