package sandboxer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// lazyProvider connects to each runtime (the Docker engine, the Kubernetes
// cluster) on first use and routes every call to the runtime it concerns:
// a create by its request's runtime, a probe, delete or data move by its
// record's. A failed connect is not remembered, so a long-running serve
// recovers when the engine comes back. It forwards Provider and, found
// with apply.As on the connected provider, each capability the packages it
// is handed to use: the label inventory (reap), data (snapshot) and SQL
// (seeds). A capability the provider lacks fails the call that needs it,
// naming it.
type lazyProvider struct {
	connect func(ctx context.Context, runtime string) (apply.Provider, error)
	// owned is false for a provider the caller passed in: Close leaves it.
	owned bool
	// runtimes are the ones the configuration puts sandboxes on: get
	// connects them all (so an unreachable one fails a plan before
	// anything is created) and the inventory lists them all. Others are
	// connected when a record or request names them.
	runtimes []string
	mu       sync.Mutex
	conns    map[string]apply.Provider
}

var (
	_ apply.Provider          = (*lazyProvider)(nil)
	_ apply.Inventory         = (*lazyProvider)(nil)
	_ apply.NetworkChecker    = (*lazyProvider)(nil)
	_ apply.TemplateCollector = (*lazyProvider)(nil)
	_ apply.SharedSweeper     = (*lazyProvider)(nil)
	_ snapshot.Engine         = (*lazyProvider)(nil)
	_ snapshot.SQLRunner      = (*lazyProvider)(nil)
	_ apply.Forwarder         = (*lazyProvider)(nil)
)

// on returns the provider of runtime ("" is docker), connecting it.
func (l *lazyProvider) on(ctx context.Context, runtime string) (apply.Provider, error) {
	if runtime == "" {
		runtime = config.RuntimeDocker
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.conns[runtime]; p != nil {
		if e, ok := p.(interface{ Exited() bool }); !ok || !e.Exited() || !l.owned {
			return p, nil
		}
		// The runtime's program ended (internal/plugin): start it again.
		if c, ok := p.(io.Closer); ok {
			_ = c.Close()
		}
		delete(l.conns, runtime)
	}
	p, err := l.connect(ctx, runtime)
	if err != nil {
		return nil, err
	}
	if l.conns == nil {
		l.conns = map[string]apply.Provider{}
	}
	l.conns[runtime] = p
	return p, nil
}

// get connects every runtime the configuration uses and returns the
// provider that routes between them.
func (l *lazyProvider) get(ctx context.Context) (apply.Provider, error) {
	for _, rt := range l.runtimeList() {
		if _, err := l.on(ctx, rt); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *lazyProvider) runtimeList() []string {
	if len(l.runtimes) == 0 {
		return []string{config.RuntimeDocker}
	}
	return l.runtimes
}

// Close closes the providers that were connected, if they are ours.
func (l *lazyProvider) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.owned {
		return nil
	}
	var errs []error
	for _, p := range l.conns {
		if c, ok := p.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// capabilityOn connects runtime and returns its provider's capability T.
func capabilityOn[T any](ctx context.Context, l *lazyProvider, runtime, what string) (T, error) {
	var zero T
	p, err := l.on(ctx, runtime)
	if err != nil {
		return zero, err
	}
	c, ok := apply.As[T](p)
	if !ok {
		return zero, fmt.Errorf("the %s provider cannot %s", or(runtime, config.RuntimeDocker), what)
	}
	return c, nil
}

// capability returns p's capability T, as apply.As.
func capability[T any](p apply.Provider) (T, bool) { return apply.As[T](p) }

// Check asks each runtime about its own images. Providers see uses
// without the runtime (each knows its own) and the answers get it back.
func (l *lazyProvider) Check(ctx context.Context, images []plan.ImageUse) (plan.Capabilities, error) {
	byRuntime := map[string][]plan.ImageUse{}
	var order []string
	for _, u := range images {
		if _, seen := byRuntime[u.Runtime]; !seen {
			order = append(order, u.Runtime)
		}
		own := u
		own.Runtime = ""
		byRuntime[u.Runtime] = append(byRuntime[u.Runtime], own)
	}
	out := plan.Capabilities{}
	for _, rt := range order {
		p, err := l.on(ctx, rt)
		if err != nil {
			return nil, err
		}
		caps, err := p.Check(ctx, byRuntime[rt])
		if err != nil {
			return nil, err
		}
		for u, c := range caps {
			u.Runtime = rt
			// The API generation of each feature that has one, as the
			// service reads it from the version the image's module
			// reported: the same rule whatever the runtime.
			if c.Generations == nil {
				c.Generations = services.Generations(u.Service, c.Features)
			}
			out[u] = c
		}
	}
	return out, nil
}

func (l *lazyProvider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	p, err := l.on(ctx, req.Runtime)
	if err != nil {
		return nil, err
	}
	made, err := p.Create(ctx, req)
	if err == nil && req.Runtime != "" && req.Runtime != config.RuntimeDocker {
		// The record must say where it runs for every later call to find
		// its runtime, whatever the provider put there.
		made.Resources.Runtime = req.Runtime
	}
	return made, err
}

func (l *lazyProvider) Probe(ctx context.Context, rec *state.Record) error {
	p, err := l.on(ctx, rec.RuntimeOf())
	if err != nil {
		return err
	}
	return p.Probe(ctx, rec)
}

func (l *lazyProvider) Delete(ctx context.Context, rec *state.Record) error {
	p, err := l.on(ctx, rec.RuntimeOf())
	if err != nil {
		return err
	}
	return p.Delete(ctx, rec)
}

// ListManaged lists by label on every runtime the configuration uses,
// each resource marked with its runtime for DeleteManaged; a provider
// without an inventory (the fake before it had one) has no orphans to
// find.
func (l *lazyProvider) ListManaged(ctx context.Context, lineage string) ([]apply.Resource, error) {
	var out []apply.Resource
	var listed []apply.Provider // one provider passed in serves every runtime
	for _, rt := range l.runtimeList() {
		p, err := l.on(ctx, rt)
		if err != nil {
			return nil, err
		}
		if slices.Contains(listed, p) {
			continue
		}
		listed = append(listed, p)
		inv, ok := apply.As[apply.Inventory](p)
		if !ok {
			continue
		}
		items, err := inv.ListManaged(ctx, lineage)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			it.Runtime = rt
			out = append(out, it)
		}
	}
	return out, nil
}

// CollectTemplates asks each runtime in use that keeps templates to
// collect its unused ones.
func (l *lazyProvider) CollectTemplates(ctx context.Context, keep []string) ([]apply.Resource, error) {
	var out []apply.Resource
	var done []apply.Provider
	var errs []error
	for _, rt := range l.runtimeList() {
		p, err := l.on(ctx, rt)
		if err != nil {
			return out, err
		}
		if slices.Contains(done, p) {
			continue
		}
		done = append(done, p)
		tc, ok := apply.As[apply.TemplateCollector](p)
		if !ok {
			continue
		}
		items, err := tc.CollectTemplates(ctx, keep)
		errs = append(errs, err)
		for _, it := range items {
			it.Runtime = rt
			out = append(out, it)
		}
	}
	return out, errors.Join(errs...)
}

func (l *lazyProvider) DeleteManaged(ctx context.Context, items []apply.Resource) error {
	byRuntime := map[string][]apply.Resource{}
	for _, it := range items {
		byRuntime[or(it.Runtime, config.RuntimeDocker)] = append(byRuntime[or(it.Runtime, config.RuntimeDocker)], it)
	}
	rts := make([]string, 0, len(byRuntime))
	for rt := range byRuntime {
		rts = append(rts, rt)
	}
	slices.Sort(rts)
	for _, rt := range rts {
		inv, err := capabilityOn[apply.Inventory](ctx, l, rt, "list or remove its resources by label")
		if err != nil {
			return err
		}
		if err := inv.DeleteManaged(ctx, byRuntime[rt]); err != nil {
			return err
		}
	}
	return nil
}

// SweepShared asks each runtime already connected (one this run used)
// that shares resources between a lineage's instances to remove them if
// none is left; a runtime not connected is not started for it.
func (l *lazyProvider) SweepShared(ctx context.Context, lineage string) error {
	l.mu.Lock()
	var conns []apply.Provider
	for _, rt := range slices.Sorted(maps.Keys(l.conns)) {
		if p := l.conns[rt]; !slices.Contains(conns, p) {
			conns = append(conns, p)
		}
	}
	l.mu.Unlock()
	var errs []error
	for _, p := range conns {
		if s, ok := apply.As[apply.SharedSweeper](p); ok {
			errs = append(errs, s.SweepShared(ctx, lineage))
		}
	}
	return errors.Join(errs...)
}

// MissingNetworks makes the lazy provider a network checker. User
// networks are Docker's; a provider without a checker knows of none to
// lack.
func (l *lazyProvider) MissingNetworks(ctx context.Context, names []string) ([]string, error) {
	p, err := l.on(ctx, config.RuntimeDocker)
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
	e, err := capabilityOn[snapshot.Engine](ctx, l, rec.RuntimeOf(), "snapshot or restore data")
	if err != nil {
		return err
	}
	return e.Dump(ctx, rec, service, w)
}

func (l *lazyProvider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	e, err := capabilityOn[snapshot.Engine](ctx, l, rec.RuntimeOf(), "snapshot or restore data")
	if err != nil {
		return err
	}
	return e.Load(ctx, rec, service, d)
}

func (l *lazyProvider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	e, err := capabilityOn[snapshot.Engine](ctx, l, rec.RuntimeOf(), "snapshot or restore data")
	if err != nil {
		return err
	}
	return e.Keep(ctx, rec, service, d)
}

func (l *lazyProvider) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	r, err := capabilityOn[snapshot.SQLRunner](ctx, l, rec.RuntimeOf(), "run seed SQL")
	if err != nil {
		return err
	}
	return r.RunSQL(ctx, rec, files)
}

// runtimeSettings are the provider blocks of each runtime and the
// runtimes in use, for providerFor.
type runtimeSettings struct {
	docker, kubernetes *config.Provider
	uses               []string
}

// settingsOf reads the runtime settings of a configuration: the runtimes
// its instances run on, and kubernetes whenever its block is declared (so
// reap finds its orphans even when no instance is left there).
func settingsOf(cfg *config.Config) runtimeSettings {
	rs := runtimeSettings{docker: cfg.Provider, kubernetes: cfg.Kubernetes}
	seen := map[string]bool{}
	add := func(rt string) {
		if rt != "" && !seen[rt] {
			seen[rt] = true
			rs.uses = append(rs.uses, rt)
		}
	}
	add(cfg.DefaultRuntime)
	for _, in := range cfg.Instances {
		add(in.Runtime)
	}
	if cfg.Kubernetes != nil && cfg.Kubernetes.DeclRange.Filename != "" {
		add(config.RuntimeKubernetes)
	}
	slices.Sort(rs.uses)
	return rs
}

// providerFor is a provider for the given runtime settings (the
// configuration's, or a saved plan's), connected on first use; the caller
// closes it.
func (s *Sandboxer) providerFor(rs runtimeSettings) *lazyProvider {
	if s.opts.Provider != nil {
		return &lazyProvider{runtimes: rs.uses, connect: func(context.Context, string) (apply.Provider, error) { return s.opts.Provider, nil }}
	}
	return &lazyProvider{owned: true, runtimes: rs.uses, connect: func(ctx context.Context, runtime string) (apply.Provider, error) {
		pc := rs.docker
		if runtime == config.RuntimeKubernetes {
			pc = rs.kubernetes
		}
		return s.connect(ctx, runtime, pc)
	}}
}

// fileSettings are the runtime settings a saved plan brings.
func fileSettings(f *plan.File) runtimeSettings {
	return runtimeSettings{docker: f.Provider, kubernetes: f.Kubernetes, uses: f.Runtimes()}
}

// or returns the first non-empty string.
func or(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
