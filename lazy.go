package sandboxer

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/providers/docker"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// lazyProvider connects to the engine on first use. A failed connect is
// not remembered, so a long-running serve recovers when the engine comes
// back.
type lazyProvider struct {
	connect func(ctx context.Context) (apply.Provider, error)
	mu      sync.Mutex
	p       apply.Provider
}

func (l *lazyProvider) get(ctx context.Context) (apply.Provider, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p != nil {
		return l.p, nil
	}
	p, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.p = p
	return p, nil
}

func (l *lazyProvider) Check(ctx context.Context, services []string) (plan.Capabilities, error) {
	p, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.Check(ctx, services)
}

func (l *lazyProvider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	p, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.Create(ctx, req)
}

func (l *lazyProvider) Probe(ctx context.Context, rec *state.Record) error {
	p, err := l.get(ctx)
	if err != nil {
		return err
	}
	return p.Probe(ctx, rec)
}

func (l *lazyProvider) Delete(ctx context.Context, rec *state.Record) error {
	p, err := l.get(ctx)
	if err != nil {
		return err
	}
	return p.Delete(ctx, rec)
}

// Close closes the provider if one was connected.
func (l *lazyProvider) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.p.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// unclosable keeps Close from closing a provider the caller passed in
// (and owns), while still letting engineInventory see its listing.
type unclosable struct{ apply.Provider }

func (u unclosable) managed() (managedEngine, bool) {
	m, ok := u.Provider.(managedEngine)
	return m, ok
}

// managedEngine is what the docker provider offers for finding resources
// by their labels.
type managedEngine interface {
	ListManaged(ctx context.Context, lineage string) ([]docker.Managed, error)
	DeleteManaged(ctx context.Context, items []docker.Managed) error
}

// engineInventory adapts the provider's label listing to ondemand.Inventory.
// A provider without one (the fake) has no orphans to find.
type engineInventory struct{ l *lazyProvider }

func (e engineInventory) engine(ctx context.Context) (managedEngine, error) {
	p, err := e.l.get(ctx)
	if err != nil {
		return nil, err
	}
	if u, ok := p.(unclosable); ok {
		if m, ok := u.managed(); ok {
			return m, nil
		}
		return nil, nil
	}
	m, ok := p.(managedEngine)
	if !ok {
		return nil, errors.New("this provider cannot list its resources by label")
	}
	return m, nil
}

func (e engineInventory) ListManaged(ctx context.Context, lineage string) ([]ondemand.Resource, error) {
	m, err := e.engine(ctx)
	if err != nil || m == nil {
		return nil, err
	}
	items, err := m.ListManaged(ctx, lineage)
	if err != nil {
		return nil, err
	}
	out := make([]ondemand.Resource, len(items))
	for i, it := range items {
		out[i] = ondemand.Resource{Kind: it.Kind, ID: it.ID, Name: it.Name, Address: it.Address, Lineage: it.Lineage, Generation: it.Generation}
	}
	return out, nil
}

func (e engineInventory) DeleteManaged(ctx context.Context, items []ondemand.Resource) error {
	m, err := e.engine(ctx)
	if err != nil || m == nil {
		return err
	}
	in := make([]docker.Managed, len(items))
	for i, it := range items {
		in[i] = docker.Managed{Kind: it.Kind, ID: it.ID, Name: it.Name, Address: it.Address, Lineage: it.Lineage, Generation: it.Generation}
	}
	return m.DeleteManaged(ctx, in)
}

// engine returns the connected provider's data engine.
func (l *lazyProvider) engine(ctx context.Context) (snapshot.Engine, error) {
	p, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	if u, ok := p.(unclosable); ok {
		p = u.Provider
	}
	e, ok := p.(snapshot.Engine)
	if !ok {
		return nil, errors.New("this provider cannot snapshot or restore data")
	}
	return e, nil
}

// Dump, Load and Keep make the lazy provider a snapshot.Engine.
func (l *lazyProvider) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	e, err := l.engine(ctx)
	if err != nil {
		return err
	}
	return e.Dump(ctx, rec, service, w)
}

func (l *lazyProvider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	e, err := l.engine(ctx)
	if err != nil {
		return err
	}
	return e.Load(ctx, rec, service, d)
}

func (l *lazyProvider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	e, err := l.engine(ctx)
	if err != nil {
		return err
	}
	return e.Keep(ctx, rec, service, d)
}

// RunSQL runs seed SQL through the connected provider.
func (l *lazyProvider) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	p, err := l.get(ctx)
	if err != nil {
		return err
	}
	if u, ok := p.(unclosable); ok {
		p = u.Provider
	}
	r, ok := p.(snapshot.SQLRunner)
	if !ok {
		return errors.New("this provider cannot run seed SQL")
	}
	return r.RunSQL(ctx, rec, files)
}
