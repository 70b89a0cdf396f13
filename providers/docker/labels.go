package docker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/sandboxer/sandboxer/apply"
)

// Label keys put on every container, network and volume this package makes.
const (
	LabelManaged    = "dev.sandboxer.managed"
	LabelAddress    = "dev.sandboxer.address"
	LabelLineage    = "dev.sandboxer.lineage"
	LabelGeneration = "dev.sandboxer.generation"
	LabelService    = "dev.sandboxer.service" // containers only
	// LabelNetwork marks the network a lineage's sandboxes share (value
	// "lineage"); it has no address or generation label.
	LabelNetwork = "dev.sandboxer.network"
)

// Kinds of managed resources, in the order they must be removed.
const (
	KindContainer = apply.KindContainer
	KindNetwork   = apply.KindNetwork
	KindVolume    = apply.KindVolume
)

// Managed is one engine resource carrying sandboxer labels.
type Managed = apply.Resource

// instanceLabels are the labels of every resource of one instance.
func instanceLabels(address, lineage string, generation int) map[string]string {
	return map[string]string{
		LabelManaged:    "true",
		LabelAddress:    address,
		LabelLineage:    lineage,
		LabelGeneration: strconv.Itoa(generation),
	}
}

// lineageNetworkLabels are the labels of a lineage's shared network, by
// which it is found again.
func lineageNetworkLabels(lineage string) map[string]string {
	return map[string]string{
		LabelManaged: "true",
		LabelLineage: lineage,
		LabelNetwork: "lineage",
	}
}

// serviceLabels adds the service label for a container.
func serviceLabels(address, lineage string, generation int, service string) map[string]string {
	l := instanceLabels(address, lineage, generation)
	l[LabelService] = service
	return l
}

func managedFrom(kind, id, name string, labels map[string]string) Managed {
	gen, err := strconv.Atoi(labels[LabelGeneration])
	if err != nil {
		gen = -1
	}
	return Managed{
		Kind:       kind,
		ID:         id,
		Name:       name,
		Address:    labels[LabelAddress],
		Lineage:    labels[LabelLineage],
		Generation: gen,
		Service:    labels[LabelService],
	}
}

// ListManaged returns every container (running or not), network and volume
// labelled as managed by sandboxer with the given lineage; an empty lineage
// lists those of every lineage. The orphan reaper compares this with state.
func (p *Provider) ListManaged(ctx context.Context, lineage string) ([]Managed, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	if lineage != "" {
		f.Add("label", LabelLineage+"="+lineage)
	}
	var out []Managed
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, p.engineErr("list containers", err)
	}
	for _, c := range cs {
		if c.Labels[LabelTemplate] != "" {
			continue // a template builder belongs to no lineage (pgtemplate.go)
		}
		name := ""
		if len(c.Names) > 0 {
			name = trimSlash(c.Names[0])
		}
		out = append(out, managedFrom(KindContainer, c.ID, name, c.Labels))
	}
	ns, err := p.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, p.engineErr("list networks", err)
	}
	busy := map[string]bool{} // lineages with a container
	for _, m := range out {
		busy[m.Lineage] = true
	}
	for _, n := range ns {
		// A lineage's shared network belongs to no sandbox; it is left
		// over (an orphan) only once no container of its lineage exists.
		if n.Labels[LabelNetwork] != "" && busy[n.Labels[LabelLineage]] {
			continue
		}
		out = append(out, managedFrom(KindNetwork, n.ID, n.Name, n.Labels))
	}
	vs, err := p.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, p.engineErr("list volumes", err)
	}
	now := time.Now()
	uppers := map[string]bool{} // fork bases an upper volume names
	for _, v := range vs.Volumes {
		if b := v.Labels[LabelForkUpper]; b != "" {
			uppers[b] = true
		}
	}
	for _, v := range vs.Volumes {
		if lockMayBeHeld(v.Labels, v.CreatedAt, now) || v.Labels[LabelTemplate] != "" {
			continue // templates belong to no lineage (CollectTemplates)
		}
		if v.Labels[LabelForkBase] != "" && uppers[v.Name] {
			continue // a fork's base that a copy still uses (forkoverlay.go)
		}
		out = append(out, managedFrom(KindVolume, v.Name, v.Name, v.Labels))
	}
	return out, nil
}

// DeleteManaged removes the given resources, as listed by ListManaged:
// containers first (forced, with their anonymous volumes), then networks,
// then volumes, so nothing is still in use when its turn comes. Resources
// already gone count as removed. It tries every item and returns all
// failures joined. It does not re-check labels: pass only what ListManaged
// returned.
//
// A lineage's shared network (a network without an address) that a
// concurrent Create has started using meanwhile is left alone, without
// error. Once the containers are gone, the shared network of each lineage
// they carried is removed if no container of that lineage remains.
func (p *Provider) DeleteManaged(ctx context.Context, items []Managed) error {
	order := map[string]int{KindContainer: 0, KindNetwork: 1, KindVolume: 2}
	sorted := append([]Managed(nil), items...)
	sort.SliceStable(sorted, func(i, j int) bool { return order[sorted[i].Kind] < order[sorted[j].Kind] })
	var errs []error
	for _, m := range sorted {
		var err error
		switch m.Kind {
		case KindContainer:
			err = p.removeContainer(ctx, m.ID)
			if err == nil {
				err = p.removeOrphanCAFile(m) // reach.go
			}
		case KindNetwork:
			if m.Address == "" {
				err = p.removeSharedNetwork(ctx, m.Lineage, m.ID)
			} else {
				err = p.removeNetwork(ctx, m.ID)
			}
		case KindVolume:
			err = p.removeVolume(ctx, m.ID)
		default:
			err = fmt.Errorf("unknown kind %q", m.Kind)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", m.Kind, displayName(m), err))
		}
	}
	lineages := map[string]bool{}
	for _, m := range sorted {
		if m.Kind == KindContainer && m.Lineage != "" && !lineages[m.Lineage] {
			lineages[m.Lineage] = true
			errs = append(errs, p.removeNetworkIfUnused(ctx, m.Lineage))
		}
	}
	return errors.Join(errs...)
}

// sweep removes everything labelled with one instance's address, lineage and
// generation. Filtering on address and generation happens here rather than
// in the engine so that any address spelling works.
func (p *Provider) sweep(ctx context.Context, address, lineage string, generation int) error {
	all, err := p.ListManaged(ctx, lineage)
	if err != nil {
		return err
	}
	var mine []Managed
	for _, m := range all {
		if m.Address == address && m.Generation == generation {
			mine = append(mine, m)
		}
	}
	return p.DeleteManaged(ctx, mine)
}

func displayName(m Managed) string {
	if m.Name != "" {
		return m.Name
	}
	return shortID(m.ID)
}

func trimSlash(s string) string {
	if len(s) > 0 && s[0] == '/' {
		return s[1:]
	}
	return s
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// removeVolume removes a volume; gone counts as removed. A fork copy's
// upper volume takes its fork's base along once no other upper names it
// (forkoverlay.go).
func (p *Provider) removeVolume(ctx context.Context, name string) error {
	v, err := p.cli.VolumeInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return p.engineErr("inspect volume", err)
	}
	err = p.cli.VolumeRemove(ctx, name, true)
	if cerrdefs.IsConflict(err) && p.removeHelpersOf(ctx, name) {
		// In use by a fork's helper container that a killed process
		// left (it mounts the base and every copy's upper, but carries
		// one copy's labels): gone now, so the volume can go too.
		err = p.cli.VolumeRemove(ctx, name, true)
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return p.engineErr("remove volume", err)
	}
	if base := v.Labels[LabelForkUpper]; base != "" {
		return p.removeForkBaseIfUnused(ctx, base)
	}
	return nil
}

// removeHelpersOf removes the fork helper containers (LabelForkFill,
// short-lived by design) that mount volume name, and reports whether
// there were any.
func (p *Provider) removeHelpersOf(ctx context.Context, name string) bool {
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("volume", name), filters.Arg("label", LabelForkFill+"=true"))})
	if err != nil || len(cs) == 0 {
		return false
	}
	for _, c := range cs {
		_ = p.removeContainer(ctx, c.ID)
	}
	return true
}
