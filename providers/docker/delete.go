package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"

	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/state"
)

// Delete removes a recorded instance: its containers (forced, with their
// anonymous volumes), then its volumes, then anything else labelled with
// its address, lineage and generation (a crash between creating a resource
// and writing state leaves such strays), and finally the lineage's shared
// network if no container of the lineage is left (a record from before
// shared networks names a network of its own, removed like a volume). What
// is already gone counts as removed, so Delete is idempotent. A recorded id
// whose resource does not carry this instance's labels is left alone.
//
// The record has no lineage; it is read from the labels of the recorded
// resources. When none of them exists any more the label sweep is skipped
// (the orphan reaper, via ListManaged, catches what is left).
func (p *Provider) Delete(ctx context.Context, rec *state.Record) error {
	if rec == nil {
		return errors.New("delete: no record")
	}
	var errs []error
	lineage := ""
	note := func(labels map[string]string) {
		if lineage == "" {
			lineage = labels[LabelLineage]
		}
	}
	for _, svc := range slices.Sorted(maps.Keys(rec.Resources.Containers)) {
		id := rec.Resources.Containers[svc]
		ci, err := p.cli.ContainerInspect(ctx, id)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, p.engineErr("inspect "+svc+" container", err))
			continue
		}
		var labels map[string]string
		if ci.Config != nil {
			labels = ci.Config.Labels
		}
		if err := owned(labels, rec.ResourceAddress()); err != nil {
			errs = append(errs, fmt.Errorf("%s container %s: %w", svc, trimSlash(ci.Name), err))
			continue
		}
		note(labels)
		if err := p.removeContainer(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("%s container %s: %w", svc, trimSlash(ci.Name), err))
		}
	}
	if id := rec.Resources.Network; id != "" {
		n, err := p.cli.NetworkInspect(ctx, id, network.InspectOptions{})
		switch {
		case cerrdefs.IsNotFound(err):
		case err != nil:
			errs = append(errs, p.engineErr("inspect network", err))
		case n.Labels[LabelManaged] == "true" && n.Labels[LabelNetwork] != "":
			// The lineage's shared network: removed below once unused.
			note(n.Labels)
		case owned(n.Labels, rec.ResourceAddress()) != nil:
			errs = append(errs, fmt.Errorf("network %s: %w", n.Name, owned(n.Labels, rec.ResourceAddress())))
		default:
			note(n.Labels)
			if err := p.removeNetwork(ctx, id); err != nil {
				errs = append(errs, fmt.Errorf("network %s: %w", n.Name, err))
			}
		}
	}
	for _, name := range rec.Resources.Volumes {
		v, err := p.cli.VolumeInspect(ctx, name)
		switch {
		case cerrdefs.IsNotFound(err):
		case err != nil:
			errs = append(errs, p.engineErr("inspect volume "+name, err))
		case owned(v.Labels, rec.ResourceAddress()) != nil:
			errs = append(errs, fmt.Errorf("volume %s: %w", name, owned(v.Labels, rec.ResourceAddress())))
		default:
			note(v.Labels)
			if err := p.DeleteManaged(ctx, []Managed{{Kind: KindVolume, ID: name, Name: name}}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if lineage != "" {
		if err := p.sweep(ctx, rec.ResourceAddress(), lineage, rec.Generation); err != nil {
			errs = append(errs, fmt.Errorf("sweep labelled leftovers: %w", err))
		}
		if err := p.removeNetworkIfUnused(ctx, lineage); err != nil {
			errs = append(errs, fmt.Errorf("lineage network: %w", err))
		}
	}
	errs = append(errs, kit.RemoveCAFiles(rec))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete %s: %w", rec.Address, err)
	}
	return nil
}

// owned reports whether labels mark a resource of the instance at address.
func owned(labels map[string]string, address string) error {
	if labels[LabelManaged] != "true" || labels[LabelAddress] != address {
		return fmt.Errorf("not labelled as sandboxer's resource for %s; refusing to remove it", address)
	}
	return nil
}
