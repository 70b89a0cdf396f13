package sandboxer

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// lazyProvider connects to the engine on first use. A failed connect is
// not remembered, so a long-running serve recovers when the engine comes
// back. It forwards Provider and, found with apply.As on the connected
// provider, each capability the packages it is handed to use: the label
// inventory (reap), data (snapshot) and SQL (seeds). A capability the
// provider lacks fails the call that needs it, naming it.
type lazyProvider struct {
	connect func(ctx context.Context) (apply.Provider, error)
	// owned is false for a provider the caller passed in: Close leaves it.
	owned bool
	mu    sync.Mutex
	p     apply.Provider
}

var (
	_ apply.Provider     = (*lazyProvider)(nil)
	_ apply.Inventory    = (*lazyProvider)(nil)
	_ snapshot.Engine    = (*lazyProvider)(nil)
	_ snapshot.SQLRunner = (*lazyProvider)(nil)
)

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

// Close closes the provider if one was connected and it is ours.
func (l *lazyProvider) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.p.(io.Closer); ok && l.owned {
		return c.Close()
	}
	return nil
}

// capabilityOf connects and returns the provider's capability T.
func capabilityOf[T any](ctx context.Context, l *lazyProvider, what string) (T, error) {
	var zero T
	p, err := l.get(ctx)
	if err != nil {
		return zero, err
	}
	c, ok := apply.As[T](p)
	if !ok {
		return zero, fmt.Errorf("this provider cannot %s", what)
	}
	return c, nil
}

// capability returns p's capability T, as apply.As.
func capability[T any](p apply.Provider) (T, bool) { return apply.As[T](p) }

func (l *lazyProvider) Check(ctx context.Context, images []plan.ImageUse) (plan.Capabilities, error) {
	p, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.Check(ctx, images)
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

// ListManaged lists by label; a provider without an inventory (the fake
// before it had one) has no orphans to find.
func (l *lazyProvider) ListManaged(ctx context.Context, lineage string) ([]apply.Resource, error) {
	p, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	inv, ok := apply.As[apply.Inventory](p)
	if !ok {
		return nil, nil
	}
	return inv.ListManaged(ctx, lineage)
}

func (l *lazyProvider) DeleteManaged(ctx context.Context, items []apply.Resource) error {
	if len(items) == 0 {
		return nil
	}
	inv, err := capabilityOf[apply.Inventory](ctx, l, "list or remove its resources by label")
	if err != nil {
		return err
	}
	return inv.DeleteManaged(ctx, items)
}

// MissingNetworks makes the lazy provider a network checker; a provider
// without one knows of no user networks to lack.
func (l *lazyProvider) MissingNetworks(ctx context.Context, names []string) ([]string, error) {
	p, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	nc, ok := apply.As[apply.NetworkChecker](p)
	if !ok {
		return nil, nil
	}
	return nc.MissingNetworks(ctx, names)
}

func (l *lazyProvider) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	e, err := capabilityOf[snapshot.Engine](ctx, l, "snapshot or restore data")
	if err != nil {
		return err
	}
	return e.Dump(ctx, rec, service, w)
}

func (l *lazyProvider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	e, err := capabilityOf[snapshot.Engine](ctx, l, "snapshot or restore data")
	if err != nil {
		return err
	}
	return e.Load(ctx, rec, service, d)
}

func (l *lazyProvider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	e, err := capabilityOf[snapshot.Engine](ctx, l, "snapshot or restore data")
	if err != nil {
		return err
	}
	return e.Keep(ctx, rec, service, d)
}

func (l *lazyProvider) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	r, err := capabilityOf[snapshot.SQLRunner](ctx, l, "run seed SQL")
	if err != nil {
		return err
	}
	return r.RunSQL(ctx, rec, files)
}

// providerFor is a provider for other provider settings than the
// configuration's (a saved plan's), connected on first use; the caller
// closes it.
func (s *Sandboxer) providerFor(pc *config.Provider) *lazyProvider {
	if s.opts.Provider != nil {
		return &lazyProvider{connect: func(context.Context) (apply.Provider, error) { return s.opts.Provider, nil }}
	}
	return &lazyProvider{owned: true, connect: func(ctx context.Context) (apply.Provider, error) {
		return s.connect(ctx, pc)
	}}
}
