package ondemand

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Request asks for one on-demand instance.
type Request struct {
	// Address is sandbox.NAME (then Key is required) or sandbox.NAME["KEY"].
	Address string
	Key     string
	// Extensions are per-call features, service → features, unioned with
	// the project's standing set. A service listed here is requested even
	// when the block's services do not name it (it must be opted in).
	Extensions map[string][]string
	// TTL overrides the block's ttl ("" keeps it): from config.MinTTL to MaxTTL.
	TTL string
	// Profile names a profile of the block's project: its services (when
	// it names any) replace the block's, its extensions are added.
	Profile string
	// Prefix starts the variable names of Result.Env ("" keeps the
	// block's env_prefix, else SANDBOXER_).
	Prefix string
	// CarryData: a replace of the live instance carries its data into the
	// new one (as carry_data = true on the block does).
	CarryData bool
}

// Request ensures the instance exists and covers what is asked, by the
// cache rule of SPEC §3: a cached instance that covers the request and
// answers its probe is returned at once (Reused); a dead one is evicted
// and re-provisioned; one that lacks a service or feature is replaced with
// the union, new before old, credentials rotated. It is idempotent, and
// concurrent calls for one instance make at most one provision.
func (b *Broker) Request(ctx context.Context, req Request) (*Result, error) {
	start := time.Now()
	t, err := b.resolve(ctx, req.Address, req.Key, false)
	if err != nil {
		return nil, err
	}
	t.start = start
	in, err := b.desired(t, req)
	if err != nil {
		return nil, err
	}
	if err := admit(ctx, t.addr, in.TTL); err != nil {
		return nil, err
	}
	prefix := in.EnvPrefix
	if req.Prefix != "" {
		if err := config.CheckEnvPrefix(req.Prefix); err != nil {
			return nil, refuse(Invalid, "%v", err)
		}
		prefix = req.Prefix
	}
	addr := t.String()
	unlock, err := b.lock(ctx, addr, "request")
	if err != nil {
		return nil, err
	}
	defer unlock()

	rec, err := b.Store.Get(ctx, addr)
	if err != nil {
		return nil, err
	}
	if rec != nil && !owns(ctx, rec) {
		// Only the operator can have made it under this tenant's
		// prefix; the tenant cannot take it over.
		return nil, refuse(NotFound, "%s is not this tenant's to request", addr)
	}
	if rec == nil {
		// A new instance counts against the tenant's quota from here
		// (a reservation) until it is recorded.
		release, err := b.reserve(ctx, addr)
		if err != nil {
			return nil, err
		}
		defer release()
		if res, ok := b.claim(ctx, t, in, prefix); ok {
			return res, nil
		}
	}
	opts := plan.Options{Now: b.now(), CarryData: req.CarryData}
	ch := plan.Decide(in, rec, nil, opts)
	if ch.Action == plan.NoOp {
		perr := b.Provider.Probe(ctx, rec)
		if perr == nil {
			b.emitFor(events.Reused, t, rec.Generation, string(ch.Reason))
			return NewResult(rec, true, prefix), nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("probe %s: %w", addr, ctx.Err())
		}
		detail := perr.Error()
		if errors.Is(perr, apply.ErrNotFound) {
			detail = "its containers are gone"
		}
		ch = plan.Decide(in, rec, plan.Observed{addr: {Alive: false, Detail: detail}}, opts)
	}
	return b.provision(ctx, t, ch, prefix)
}

// Covered answers the recorded instance req names when the cache rule
// covers the request as it stands (plan.Decide says NoOp), without its
// lock and without a probe: for a caller whose next step reaches the
// instance itself and falls back to Request when it does not answer (the
// databases per test connect to its server as the admin). nil when
// there is no such record, it is another tenant's, or the rule asks for
// more (a create, a replace, an expiry): then Request.
func (b *Broker) Covered(ctx context.Context, req Request) (*state.Record, error) {
	t, err := b.resolve(ctx, req.Address, req.Key, false)
	if err != nil {
		return nil, err
	}
	in, err := b.desired(t, req)
	if err != nil {
		return nil, err
	}
	rec, err := b.Store.Get(ctx, t.String())
	if err != nil || rec == nil || !owns(ctx, rec) {
		return nil, err
	}
	if plan.Decide(in, rec, nil, plan.Options{Now: b.now()}).Action != plan.NoOp {
		return nil, nil
	}
	return rec, nil
}

// desired is the keyed instance the request asks for: the block's
// template with the per-call extensions and ttl folded in.
func (b *Broker) desired(t target, req Request) (*config.Instance, error) {
	tmpl, ok := b.Config.Instance(t.addr.Block())
	if !ok {
		return nil, refuse(NotFound, "sandbox.%s has no usable template (its project is missing)", t.addr.Name)
	}
	p := b.Config.Projects[tmpl.Project]
	if p == nil {
		return nil, refuse(NotFound, "project %q of sandbox.%s is not declared", tmpl.Project, t.addr.Name)
	}
	ext, err := b.checkExtensions(p, req.Extensions)
	if err != nil {
		return nil, err
	}
	services := slices.Clone(tmpl.Services)
	if req.Profile != "" {
		pr, err := p.Profile(strings.TrimSpace(req.Profile))
		if err != nil {
			return nil, &Error{Kind: NotFound, Msg: err.Error(), Allowed: p.ProfileNames()}
		}
		if pr.Services != nil {
			services = slices.Clone(pr.Services)
		}
		// The profile was checked against the opt-in and the allowlist
		// when the configuration loaded; like per-call extensions, a
		// service it adds features to is requested.
		ext = ext.Union(pr.Extensions)
	}
	ttl := tmpl.TTL
	if req.TTL != "" {
		if ttl, err = parseTTL(req.TTL); err != nil {
			return nil, err
		}
	}
	services = config.SortedUnique(append(services, ext.Services()...))
	provision := tmpl.Provision.Union(ext)
	return &config.Instance{
		Addr:      t.addr,
		Project:   tmpl.Project,
		Services:  services,
		Features:  tmpl.Features.Union(ext).Only(services),
		Provision: provision,
		TTL:       ttl,
		OnDemand:  true,
		Networks:  tmpl.Networks,
		Publish:   tmpl.Publish,
		Database:  tmpl.Database,
		EnvPrefix: tmpl.EnvPrefix,
		Runtime:   tmpl.Runtime,
		DeclRange: tmpl.DeclRange,
	}, nil
}

// checkExtensions bounds per-call extensions by the project's opted-in
// services and the allowlist; the result is normalised.
func (b *Broker) checkExtensions(p *config.Project, ext map[string][]string) (config.FeatureSet, error) {
	out := config.FeatureSet{}
	for svc, feats := range ext {
		if err := b.Catalog.CheckService(svc); err != nil {
			return nil, &Error{Kind: NotAllowed, Msg: err.Error(), Allowed: b.Catalog.Services()}
		}
		if !slices.Contains(p.Services, svc) {
			return nil, &Error{Kind: NotAllowed, Allowed: p.Services,
				Msg: fmt.Sprintf("project %q does not opt in %q (it opts in: %s); add it to project.%s services to request it",
					p.Name, svc, strings.Join(p.Services, ", "), p.Name)}
		}
		out[svc] = []string{}
		for _, f := range feats {
			f = strings.TrimSpace(f)
			if err := b.Catalog.CheckFeature(svc, f); err != nil {
				return nil, &Error{Kind: NotAllowed, Msg: err.Error(), Allowed: b.Catalog.Allowed(svc)}
			}
			out[svc] = append(out[svc], f)
		}
	}
	return out.Normalize(), nil
}

// provision carries out a create or replace through apply's Executor,
// which provisions new before old, records at once, and cleans up what it
// could not record. The caller holds the instance lock.
func (b *Broker) provision(ctx context.Context, t target, ch *plan.Change, prefix string) (*Result, error) {
	addr := t.String()
	// The image each service runs is chosen as plan chooses it, then
	// images and features are checked before anything is made, as plan
	// does for apply.
	if err := plan.ChooseImagesFor([]*plan.Change{ch}, b.Config.ProviderFor); err != nil {
		return nil, &Error{Kind: Unavailable, Msg: err.Error(), Err: err}
	}
	if err := apply.Preflight(ctx, b.Provider, []*plan.Change{ch}, b.Data); err != nil {
		var ue *plan.UnprovidableError
		if errors.As(err, &ue) {
			return nil, &Error{Kind: Unavailable, Msg: ue.Error(), Err: err}
		}
		var se *apply.SeedMisfitError
		if errors.As(err, &se) {
			return nil, &Error{Kind: Unavailable, Msg: se.Error(), Err: err}
		}
		return nil, err
	}
	lineage, err := b.Store.EnsureLineage(ctx)
	if err != nil {
		return nil, err
	}
	e := &apply.Executor{
		Provider: b.Provider, Store: onDemandStore{b.Store, t.owner}, Lineage: lineage,
		Parallelism: 1, Now: b.Now, Data: b.Data,
	}
	if _, err := e.Apply(ctx, nil, &plan.Plan{Changes: []*plan.Change{ch}}); err != nil {
		b.emitFor(events.Failed, t, ch.PriorGeneration+1, err.Error())
		return nil, err
	}
	rec, err := b.Store.Get(ctx, addr)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("%s: provisioned, but its record is missing from state", addr)
	}
	typ := events.Provisioned
	if ch.Action == plan.CreateThenDelete {
		typ = events.Replaced
	}
	b.emitFor(typ, t, rec.Generation, string(ch.Reason))
	return NewResult(rec, false, prefix), nil
}

// onDemandStore marks what the Executor records as on-demand, owned by
// the caller's tenant. It has no
// LockInstance on purpose: the broker already holds the instance lock, and
// a second flock on it from this process would wait for itself.
type onDemandStore struct {
	s     Store
	owner string // the tenant the instance is for
}

func (o onDemandStore) Get(ctx context.Context, addr string) (*state.Record, error) {
	return o.s.Get(ctx, addr)
}

func (o onDemandStore) Put(ctx context.Context, rec *state.Record) error {
	rec.OnDemand = true
	rec.Owner = o.owner
	return o.s.Put(ctx, rec)
}

func (o onDemandStore) Delete(ctx context.Context, addr string) error { return o.s.Delete(ctx, addr) }
