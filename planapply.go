package sandboxer

import (
	"context"
	"fmt"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// PlanOptions are plan's flags.
type PlanOptions struct {
	// NoRefresh plans from state alone, without probing cached sandboxes
	// (and without the engine).
	NoRefresh bool
	// Targets limit the plan to these addresses (sandbox.NAME or
	// sandbox.NAME["KEY"]).
	Targets []string
	// Replace forces replacement of these addresses.
	Replace []string
	// Destroy plans the removal of every (targeted) sandbox.
	Destroy bool
}

// Plan refreshes and diffs the configuration against state, as `sandboxer
// plan`. The plan is data: Changes with Action and Reason per address,
// plus the lineage and serial of the state it was made against, which
// Apply checks. The state lock is held only while state is read.
func (s *Sandboxer) Plan(ctx context.Context, o PlanOptions) (*plan.Plan, error) {
	targets, err := parseAddrs("Targets", o.Targets)
	if err != nil {
		return nil, err
	}
	replace, err := parseAddrs("Replace", o.Replace)
	if err != nil {
		return nil, err
	}
	unlock, err := s.store.Lock(ctx, "plan", s.opts.LockTimeout)
	if err != nil {
		return nil, classify(err)
	}
	snap, err := s.store.Snapshot(ctx)
	_ = unlock()
	if err != nil {
		return nil, classify(err)
	}
	var obs plan.Observed
	if !o.NoRefresh && len(snap.Records) > 0 {
		prov, err := s.prov.get(ctx)
		if err != nil {
			return nil, classify(fmt.Errorf("refresh: %w", err))
		}
		if obs, err = apply.Refresh(ctx, prov, snap, 8); err != nil {
			return nil, classify(err)
		}
	}
	p, err := plan.Build(s.cfg, snap, obs, plan.Options{Now: s.now(), Targets: targets, Replace: replace, Destroy: o.Destroy})
	if err != nil {
		return nil, classify(err)
	}
	// As `sandboxer plan`: with the engine in reach, images and features
	// are checked now, all at once, rather than one by one during Apply.
	if !o.NoRefresh && p.HasChanges() {
		prov, err := s.prov.get(ctx)
		if err != nil {
			return nil, classify(err)
		}
		if err := apply.Preflight(ctx, prov, p.Changes, s.mover()); err != nil {
			return nil, classify(err)
		}
	}
	return p, nil
}

// ApplyOptions are apply's settings.
type ApplyOptions struct {
	// Parallelism bounds concurrent changes (default 10).
	Parallelism int
	// Hook hears progress; nil ignores it.
	Hook apply.Hook
}

// Apply carries out a plan made by Plan. A plan made against state that
// changed since is refused with ErrConflict: plan again.
func (s *Sandboxer) Apply(ctx context.Context, p *plan.Plan, o ApplyOptions) (apply.Result, error) {
	unlock, err := s.store.Lock(ctx, "apply", s.opts.LockTimeout)
	if err != nil {
		return apply.Result{}, classify(err)
	}
	defer unlock()
	if err := s.store.ExpectLineage(ctx, p.Lineage, p.Serial); err != nil {
		return apply.Result{}, classify(fmt.Errorf("the plan is stale: %w", err))
	}
	if !p.HasChanges() {
		return apply.Result{}, nil
	}
	prov, err := s.prov.get(ctx)
	if err != nil {
		return apply.Result{}, classify(err)
	}
	if err := apply.Preflight(ctx, prov, p.Changes, s.mover()); err != nil {
		return apply.Result{}, classify(err)
	}
	lineage, err := s.store.EnsureLineage(ctx)
	if err != nil {
		return apply.Result{}, classify(err)
	}
	par := o.Parallelism
	if par <= 0 {
		par = 10
	}
	e := &apply.Executor{Provider: prov, Store: s.store, Lineage: lineage, Hook: o.Hook, Parallelism: par, Now: s.opts.Now, Data: s.mover()}
	res, err := e.Apply(ctx, nil, p)
	return res, classify(err)
}

func parseAddrs(field string, in []string) ([]config.Address, error) {
	out := make([]config.Address, 0, len(in))
	for _, s := range in {
		a, err := config.ParseAddress(s)
		if err != nil {
			return nil, &Error{Code: "invalid", Message: fmt.Sprintf("%s: %v", field, err), Err: err}
		}
		out = append(out, a)
	}
	return out, nil
}
