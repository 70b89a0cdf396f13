package fake

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/sandboxer/sandboxer/apply"
)

var (
	_ apply.Inventory      = (*Provider)(nil)
	_ apply.NetworkChecker = (*Provider)(nil)
)

// ListManaged lists every live instance's fake containers under their
// labels, as an engine lists what carries them; "" lists every lineage's.
func (p *Provider) ListManaged(ctx context.Context, lineage string) ([]apply.Resource, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []apply.Resource
	for _, in := range p.live {
		if lineage != "" && in.lineage != lineage {
			continue
		}
		for svc, id := range in.containers {
			out = append(out, apply.Resource{Kind: apply.KindContainer, ID: id, Name: id,
				Address: in.address, Lineage: in.lineage, Generation: in.generation, Service: svc})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteManaged removes the listed fake containers; an instance without
// containers left is gone. What is gone already counts as removed.
func (p *Provider) DeleteManaged(ctx context.Context, items []apply.Resource) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range items {
		if it.Kind != apply.KindContainer {
			return fmt.Errorf("fake provider: no %s %s to delete", it.Kind, it.ID)
		}
		for net, in := range p.live {
			for svc, id := range in.containers {
				if id == it.ID {
					delete(in.containers, svc)
				}
			}
			if len(in.containers) == 0 {
				delete(p.live, net)
			}
		}
	}
	return nil
}

// AddNetwork makes a user network exist on the fake engine.
func (p *Provider) AddNetwork(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.networks = append(p.networks, name)
}

// MissingNetworks returns the names AddNetwork was not called with.
func (p *Provider) MissingNetworks(ctx context.Context, names []string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var missing []string
	for _, n := range names {
		if !slices.Contains(p.networks, n) {
			missing = append(missing, n)
		}
	}
	return missing, nil
}
