package sandboxer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// PlanOptions are plan's settings.
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

// ApplyOptions are apply's per-call settings; unset ones come from
// Options.
type ApplyOptions struct {
	// Parallelism bounds concurrent changes; 0 means Options.Parallelism.
	Parallelism int
	// Hook hears progress; nil means Options.Hook.
	Hook apply.Hook
	// Confirm sees the plan once every check passed, before anything
	// changes; an error from it ends the call with nothing changed, and is
	// returned as it is. PlanAndApply and Destroy show it every plan, with
	// or without changes; Apply and ApplyFile only one with changes.
	Confirm func(*plan.Plan) error
	// PlanName names the saved plan of ApplyFile in errors; default "the
	// saved plan".
	PlanName string
}

// Plan refreshes and diffs the configuration against state, as `sandboxer
// plan`, holding the state lock while it plans. The plan is data: Changes
// with Action and Reason per address, plus the lineage and serial of the
// state it was made against, which Apply checks.
func (s *Sandboxer) Plan(ctx context.Context, o PlanOptions) (*plan.Plan, error) {
	op, err := s.plan(ctx, "plan", o)
	if err != nil {
		return nil, err
	}
	op.close()
	return op.plan, nil
}

// Apply carries out a plan made by Plan. A plan made against state that
// changed since is refused with ErrConflict: plan again.
func (s *Sandboxer) Apply(ctx context.Context, p *plan.Plan, o ApplyOptions) (apply.Result, error) {
	// Waiting for the lock and the checks stop at the first interrupt;
	// the apply itself sees it through Options.Interrupt.
	wctx, cancel := untilClosed(ctx, s.opts.Interrupt)
	defer cancel()
	unlock, err := s.store.Lock(wctx, "apply", s.opts.LockTimeout)
	if err != nil {
		return apply.Result{}, classify(err)
	}
	defer unlock()
	if err := s.store.ExpectLineage(wctx, p.Lineage, p.Serial); err != nil {
		return apply.Result{}, classify(fmt.Errorf("the plan is stale: %w", err))
	}
	return s.checkAndExecute(ctx, wctx, s.prov, p, o)
}

// PlanAndApply plans as Plan and carries the plan out, under one hold of
// the state lock, as `sandboxer apply` without a plan file: nothing can
// change the state between the plan Confirm is shown and its apply.
func (s *Sandboxer) PlanAndApply(ctx context.Context, po PlanOptions, o ApplyOptions) (*plan.Plan, apply.Result, error) {
	return s.planAndApply(ctx, "apply", po, o)
}

// Destroy plans the removal of every (targeted) sandbox and carries it
// out, as `sandboxer destroy`. It does not refresh: deleting tolerates
// sandboxes that are already gone.
func (s *Sandboxer) Destroy(ctx context.Context, po PlanOptions, o ApplyOptions) (*plan.Plan, apply.Result, error) {
	po.Destroy, po.NoRefresh = true, true
	return s.planAndApply(ctx, "destroy", po, o)
}

// ApplyFile carries out a saved plan (plan.File, from `plan --out`) with
// the provider settings it was made with. It is refused with ErrConflict
// when the state moved on since, or when the configuration files in the
// directory differ from those the plan was made from.
func (s *Sandboxer) ApplyFile(ctx context.Context, f *plan.File, o ApplyOptions) (apply.Result, error) {
	name := o.PlanName
	if name == "" {
		name = "the saved plan"
	}
	if err := s.checkSourcesUnchanged(name, f); err != nil {
		return apply.Result{}, err
	}
	wctx, cancel := untilClosed(ctx, s.opts.Interrupt)
	defer cancel()
	unlock, err := s.store.Lock(wctx, "apply", s.opts.LockTimeout)
	if err != nil {
		return apply.Result{}, classify(err)
	}
	defer unlock()
	if err := s.store.ExpectLineage(wctx, f.Lineage, f.Serial); err != nil {
		return apply.Result{}, &Error{Code: CodeConflict, Message: fmt.Sprintf("%s is stale: %v; run sandboxer plan again", name, err), Err: err}
	}
	p := f.Plan()
	if !p.HasChanges() {
		return apply.Result{}, nil
	}
	prov := s.providerFor(fileSettings(f))
	defer prov.Close()
	return s.checkAndExecute(ctx, wctx, prov, p, o)
}

// checkAndExecute checks images, features and seeds (the state may have
// moved on since the plan was made), lets Confirm see the plan and runs
// it.
// wctx (ended by the first interrupt) bounds the checks, ctx the apply.
func (s *Sandboxer) checkAndExecute(ctx, wctx context.Context, prov *lazyProvider, p *plan.Plan, o ApplyOptions) (apply.Result, error) {
	if !p.HasChanges() {
		return apply.Result{}, nil
	}
	if _, err := prov.get(wctx); err != nil {
		return apply.Result{}, classify(err)
	}
	if err := apply.Preflight(wctx, prov, p.Changes, s.moverFor(prov)); err != nil {
		return apply.Result{}, classify(err)
	}
	if o.Confirm != nil {
		if err := o.Confirm(p); err != nil {
			return apply.Result{}, err
		}
	}
	return s.execute(ctx, prov, p, o)
}

func (s *Sandboxer) planAndApply(ctx context.Context, operation string, po PlanOptions, o ApplyOptions) (*plan.Plan, apply.Result, error) {
	// Planning stops at the first interrupt; the apply sees it through
	// Options.Interrupt and finishes what it started.
	pctx, cancel := untilClosed(ctx, s.opts.Interrupt)
	op, err := s.plan(pctx, operation, po)
	cancel()
	if err != nil {
		return nil, apply.Result{}, err
	}
	defer op.close()
	if op.plan.HasChanges() {
		// Before asking: a confirmation is worth nothing if the engine
		// cannot be reached (a plan without refresh has not asked it).
		if _, err := s.prov.get(ctx); err != nil {
			return op.plan, apply.Result{}, classify(err)
		}
	}
	if o.Confirm != nil {
		if err := o.Confirm(op.plan); err != nil {
			return op.plan, apply.Result{}, err
		}
	}
	if !op.plan.HasChanges() {
		return op.plan, apply.Result{}, nil
	}
	res, err := s.execute(ctx, s.prov, op.plan, o)
	return op.plan, res, err
}

// operation is a plan made under the state lock, which close releases.
type operation struct {
	plan   *plan.Plan
	unlock func() error
}

func (o *operation) close() {
	if o.unlock != nil {
		_ = o.unlock()
		o.unlock = nil
	}
}

// plan takes the state lock for operation, reads state, refreshes (unless
// told not to), builds the plan and, when the engine is in reach, checks
// user networks, images and features all at once, before anything is
// created.
func (s *Sandboxer) plan(ctx context.Context, opName string, o PlanOptions) (_ *operation, err error) {
	targets, err := parseAddrs("target", o.Targets)
	if err != nil {
		return nil, err
	}
	replace, err := parseAddrs("replace", o.Replace)
	if err != nil {
		return nil, err
	}
	unlock, err := s.store.Lock(ctx, opName, s.opts.LockTimeout)
	if err != nil {
		return nil, classify(err)
	}
	defer func() {
		if err != nil {
			_ = unlock()
		}
	}()
	snap, err := s.store.Snapshot(ctx)
	if err != nil {
		return nil, classify(err)
	}
	var obs plan.Observed
	if !o.NoRefresh {
		prov, err := s.prov.get(ctx)
		if err != nil {
			return nil, classify(&RefreshError{Err: err})
		}
		if len(snap.Records) > 0 {
			if obs, err = apply.Refresh(ctx, prov, snap, refreshWidth(s.parallelism(0))); err != nil {
				return nil, classify(err)
			}
		}
	}
	p, err := plan.Build(s.cfg, snap, obs, plan.Options{Now: s.now(), Targets: targets, Replace: replace, Destroy: o.Destroy})
	var located hcl.Diagnostics
	if errors.As(err, &located) {
		// A moved block that the state contradicts: shown where it is written.
		return nil, &ConfigError{Diagnostics: located, Files: s.cfg.Files}
	}
	if err != nil {
		return nil, classify(err)
	}
	if !o.NoRefresh {
		if err := s.checkNetworks(ctx); err != nil {
			return nil, err
		}
		if err := apply.Preflight(ctx, s.prov, p.Changes, s.mover()); err != nil {
			return nil, classify(err)
		}
	}
	return &operation{plan: p, unlock: unlock}, nil
}

// execute runs p's changes through prov; the plan was checked.
func (s *Sandboxer) execute(ctx context.Context, prov *lazyProvider, p *plan.Plan, o ApplyOptions) (apply.Result, error) {
	if !p.HasChanges() {
		return apply.Result{}, nil
	}
	mover := s.moverFor(prov)
	lineage, err := s.store.EnsureLineage(ctx)
	if err != nil {
		return apply.Result{}, classify(err)
	}
	hook := o.Hook
	if hook == nil {
		hook = s.opts.Hook
	}
	if hook == nil {
		hook = apply.NopHook{}
	}
	e := &apply.Executor{Provider: prov, Store: s.store, Lineage: lineage, Hook: hook,
		Parallelism: s.parallelism(o.Parallelism), Now: s.opts.Now, Data: mover,
		ProgressEvery: s.opts.ProgressEvery}
	res, err := e.Apply(ctx, s.opts.Interrupt, p)
	if removesInstances(p) {
		// What the lineage's instances shared on a runtime goes with the
		// last of them (apply.SharedSweeper), also after a failed run.
		if serr := prov.SweepShared(context.WithoutCancel(ctx), lineage); serr != nil {
			err = errors.Join(err, fmt.Errorf("remove what the lineage's sandboxes shared: %w", serr))
		}
	}
	return res, classify(err)
}

// removesInstances reports whether p deletes or replaces an instance.
func removesInstances(p *plan.Plan) bool {
	for _, ch := range p.Changes {
		if ch.Action == plan.Delete || ch.Action == plan.CreateThenDelete {
			return true
		}
	}
	return false
}

// untilClosed is ctx, also cancelled when ch closes (a nil ch never does).
func untilClosed(ctx context.Context, ch <-chan struct{}) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	if ch != nil {
		go func() {
			select {
			case <-ch:
				cancel()
			case <-c.Done():
			}
		}()
	}
	return c, cancel
}

// RefreshError is a refresh that could not ask the engine: plan fails
// rather than call every cached sandbox dead.
type RefreshError struct{ Err error }

func (e *RefreshError) Error() string { return "refresh: " + e.Err.Error() }
func (e *RefreshError) Unwrap() error { return e.Err }

// refreshWidth is how many sandboxes a refresh probes at once: probes
// are light, so at least 8 whatever the apply parallelism.
func refreshWidth(parallelism int) int { return max(parallelism, 8) }

// checkNetworks refuses a configuration naming user networks the engine
// lacks, with a diagnostic where each is named. validate cannot: it has no
// engine to ask.
func (s *Sandboxer) checkNetworks(ctx context.Context) error {
	if len(s.cfg.NetworkRefs) == 0 {
		return nil
	}
	prov, err := s.prov.get(ctx)
	if err != nil {
		return classify(err)
	}
	nc, ok := capability[apply.NetworkChecker](prov)
	if !ok {
		return nil
	}
	missing, err := nc.MissingNetworks(ctx, s.cfg.NetworkNames())
	if err != nil {
		return classify(fmt.Errorf("check user networks: %w", err))
	}
	diags := s.cfg.UnknownNetworkDiagnostics(missing)
	if diags.HasErrors() {
		return &ConfigError{Diagnostics: diags, Files: s.cfg.Files}
	}
	return nil
}

// checkSourcesUnchanged refuses a saved plan whose configuration files
// differ from those in the configuration directory now: the plan would
// carry out decisions the current configuration no longer makes.
func (s *Sandboxer) checkSourcesUnchanged(name string, f *plan.File) error {
	current, diags := config.ReadSources(s.dir)
	if diags.HasErrors() {
		return &ConfigError{Diagnostics: diags}
	}
	changed := plan.ChangedSources(f, current)
	if len(changed) == 0 {
		return nil
	}
	return &Error{Code: CodeConflict, Message: fmt.Sprintf("%s was made from another configuration than the one in %s now (changed: %s); nothing was changed, run sandboxer plan again",
		name, displayDir(s.dir), strings.Join(changed, ", "))}
}

// displayDir names a configuration directory in messages.
func displayDir(dir string) string {
	if dir == "" || dir == "." {
		return "the current directory"
	}
	return dir
}

func parseAddrs(field string, in []string) ([]config.Address, error) {
	out := make([]config.Address, 0, len(in))
	for _, a := range in {
		addr, err := config.ParseAddress(a)
		if err != nil {
			return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("--%s: %v", field, err), Err: err}
		}
		out = append(out, addr)
	}
	return out, nil
}
