package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// PlanningOptions are the flags shared by plan, apply and destroy.
type PlanningOptions struct {
	Vars        VarOptions
	Refresh     bool
	Targets     []string
	Replace     []string
	LockTimeout time.Duration
	Parallelism int
}

// planned is a plan with everything that produced it.
type planned struct {
	cfg      *config.Config
	store    *state.Store
	snap     *state.Snapshot
	plan     *plan.Plan
	provider apply.Provider // nil when refresh was off and nothing needed the engine
	unlock   func() error
}

// close releases the state lock and the provider.
func (p *planned) close() {
	if p.unlock != nil {
		_ = p.unlock()
	}
	if c, ok := p.provider.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// makePlan loads configuration, locks and reads state, refreshes and
// builds a plan. The caller must call close on the result.
func makePlan(ctx context.Context, f *Factory, o PlanningOptions, operation string, destroy bool) (*planned, error) {
	targets, err := parseAddrs("--target", o.Targets)
	if err != nil {
		return nil, err
	}
	replace, err := parseAddrs("--replace", o.Replace)
	if err != nil {
		return nil, err
	}
	p := &planned{store: f.Store()}
	var snapErr error
	lockAndRead := func() {
		unlock, err := p.store.Lock(ctx, operation, o.LockTimeout)
		if err != nil {
			snapErr = lockError(err)
			return
		}
		p.unlock = unlock
		p.snap, snapErr = p.store.Snapshot(ctx)
	}
	// With a state file to read, reading it overlaps decoding the
	// configuration. Without one, the configuration is checked first, so
	// that a broken configuration creates no .sandboxer folder.
	var stateRead chan struct{}
	if _, statErr := os.Stat(p.store.Path()); statErr == nil {
		stateRead = make(chan struct{})
		go func() {
			defer close(stateRead)
			lockAndRead()
		}()
	}
	p.cfg, err = loadConfig(f, o.Vars)
	if stateRead != nil {
		<-stateRead
	}
	ok := false
	defer func() {
		if !ok {
			p.close()
		}
	}()
	if err != nil {
		return nil, err
	}
	if stateRead == nil {
		lockAndRead()
	}
	if snapErr != nil {
		return nil, snapErr
	}
	cfg := p.cfg
	var obs plan.Observed
	if o.Refresh {
		prov, err := f.NewProvider(ctx, cfg.Provider, f.Catalog)
		if err != nil {
			if operation == "plan" {
				return nil, fmt.Errorf("refresh: %w (use --refresh=false to plan without the engine)", err)
			}
			return nil, fmt.Errorf("refresh: %w", err)
		}
		p.provider = prov
		if len(p.snap.Records) > 0 {
			obs, err = apply.Refresh(ctx, p.provider, p.snap, max(o.Parallelism, 8))
			if err != nil {
				return nil, err
			}
		}
	}
	p.plan, err = plan.Build(cfg, p.snap, obs, plan.Options{
		Now: f.Now(), Targets: targets, Replace: replace, Destroy: destroy})
	if err != nil {
		return nil, err
	}
	if p.provider != nil {
		if err := checkNetworks(ctx, f, cfg, p.provider); err != nil {
			return nil, err
		}
		if err := apply.Preflight(ctx, p.provider, p.plan.Changes, dataMover(f, p.provider)); err != nil {
			return nil, unprovidable(f, err, cfg)
		}
	}
	ok = true
	return p, nil
}

func parseAddrs(flag string, in []string) ([]config.Address, error) {
	out := make([]config.Address, 0, len(in))
	for _, s := range in {
		a, err := config.ParseAddress(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		out = append(out, a)
	}
	return out, nil
}
