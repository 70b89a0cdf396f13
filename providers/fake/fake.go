package fake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// Provider is the fake engine. The zero value is not usable; call New.
// It is safe for concurrent use.
type Provider struct {
	cat *config.Catalog

	mu       sync.Mutex
	n        int
	live     map[string]*instance // by network id
	networks []string             // user networks (AddNetwork)
}

type instance struct {
	address    string
	lineage    string
	generation int
	creds      map[string]state.Credentials
	containers map[string]string // service → fake container id
}

var _ apply.Provider = (*Provider)(nil)

// New returns an empty fake engine that checks services and features
// against cat (nil: config.DefaultCatalog()).
func New(cat *config.Catalog) *Provider {
	if cat == nil {
		cat = config.DefaultCatalog()
	}
	return &Provider{cat: cat, live: map[string]*instance{}}
}

// Check accepts every service of the catalog and reports that each image
// provides every feature the catalog allows.
func (p *Provider) Check(ctx context.Context, images []plan.ImageUse) (plan.Capabilities, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	caps := plan.Capabilities{}
	for _, u := range images {
		if err := p.cat.CheckService(u.Service); err != nil {
			return nil, fmt.Errorf("fake provider: %w", err)
		}
		ref := u.Ref
		if ref == "" {
			ref = "fake/" + u.Service
		}
		ic := plan.ImageCapabilities{Image: ref, Features: map[string]string{}}
		for _, f := range p.cat.Allowed(u.Service) {
			ic.Features[f] = "fake"
		}
		caps[u] = ic
	}
	return caps, nil
}

// Create "provisions" an instance: fresh random passwords, one fake
// container per service and a fake network, recorded as live.
func (p *Provider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("create %s: %w", req.Address, err)
	}
	if len(req.Features) == 0 {
		return nil, fmt.Errorf("create %s: no services requested", req.Address)
	}
	for svc, feats := range req.Features {
		if err := p.cat.CheckService(svc); err != nil {
			return nil, fmt.Errorf("create %s: %w", req.Address, err)
		}
		for _, f := range feats {
			if err := p.cat.CheckFeature(svc, f); err != nil {
				return nil, fmt.Errorf("create %s: %w", req.Address, err)
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	network := fmt.Sprintf("fake-net-%d", p.n)
	out := &apply.Created{
		Credentials:         map[string]state.Credentials{},
		Resources:           state.Resources{Network: network, Containers: map[string]string{}},
		AvailableExtensions: map[string][]string{},
	}
	for i, svc := range req.Features.Services() {
		c := state.Credentials{Host: "127.0.0.1", Port: 20000 + (p.n*10+i)%40000, User: "app",
			Password: state.Secret(randomHex()), AdminUser: "sbx_admin", AdminPassword: state.Secret(randomHex())}
		if s, ok := services.Lookup(svc); ok && s.NamesDatabase() {
			c.Database = req.Database
			if c.Database == "" {
				c.Database = config.DefaultDatabase
			}
		}
		out.Credentials[svc] = c
		out.Resources.Containers[svc] = fmt.Sprintf("fake-%d-%s", p.n, svc)
		if allowed := p.cat.Allowed(svc); len(allowed) > 0 {
			out.AvailableExtensions[svc] = allowed
		}
	}
	p.live[network] = &instance{address: req.Address, lineage: req.Lineage, generation: req.Generation,
		creds: out.Credentials, containers: maps.Clone(out.Resources.Containers)}
	return out, nil
}

// Probe succeeds while the instance lives and the record's credentials
// are the ones it handed out.
func (p *Provider) Probe(ctx context.Context, rec *state.Record) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("probe %s: %w", rec.Address, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, ok := p.live[rec.Resources.Network]
	if !ok || in.address != rec.Address {
		return fmt.Errorf("probe %s: %w", rec.Address, apply.ErrNotFound)
	}
	for _, svc := range rec.Services {
		want, ok := in.creds[svc]
		if !ok {
			return fmt.Errorf("probe %s: %s is not running: %w", rec.Address, svc, apply.ErrNotFound)
		}
		got := rec.Credentials[svc]
		if got.User != want.User || got.Password.Reveal() != want.Password.Reveal() {
			return fmt.Errorf("probe %s: %s refused the recorded credentials", rec.Address, svc)
		}
	}
	return nil
}

// Delete forgets the instance; an instance already gone is fine.
func (p *Provider) Delete(ctx context.Context, rec *state.Record) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", rec.Address, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.live, rec.Resources.Network)
	return nil
}

// Kill makes every live instance of address disappear, as a crashed
// container would, and says how many there were.
func (p *Provider) Kill(address string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for id, in := range p.live {
		if in.address == address {
			delete(p.live, id)
			n++
		}
	}
	return n
}

// Live lists the addresses of the live instances, sorted, one entry per
// instance (a replace in flight shows an address twice).
func (p *Provider) Live() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.live))
	for _, in := range p.live {
		out = append(out, in.address)
	}
	sort.Strings(out)
	return out
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}
