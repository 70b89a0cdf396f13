package apply

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Store is the part of the state store apply writes through.
type Store interface {
	Get(ctx context.Context, addr string) (*state.Record, error)
	Put(ctx context.Context, rec *state.Record) error
	Delete(ctx context.Context, addr string) error
}

// Executor carries out plans.
type Executor struct {
	Provider Provider
	Store    Store
	Hook     Hook
	// Lineage labels every resource so orphans can be traced to this state.
	Lineage     string
	Parallelism int
	Now         func() time.Time
	// ProgressEvery is how often Hook.Progress fires for a running change.
	ProgressEvery time.Duration
}

// Result counts what an apply did.
type Result struct {
	Created, Replaced, Destroyed, Reused int
}

// InstanceError is one instance's failure.
type InstanceError struct {
	Addr   string
	Action plan.Action
	Err    error
}

func (e *InstanceError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Addr, actionVerb(e.Action), e.Err)
}

func (e *InstanceError) Unwrap() error { return e.Err }

// Apply runs every change of p, at most Parallelism at once. Closing stop
// (a first Ctrl-C) stops starting new changes; cancelling ctx (a second
// one) abandons changes in flight, whose providers still clean up after
// themselves. Each finished instance is committed to state at once, so an
// interrupted or partly failed apply keeps what succeeded.
func (e *Executor) Apply(ctx context.Context, stop <-chan struct{}, p *plan.Plan) (Result, error) {
	var (
		res  Result
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	par := max(e.Parallelism, 1)
	sem := make(chan struct{}, par)
	stopped := false
	for _, ch := range p.Changes {
		if ch.Action == plan.NoOp {
			res.Reused++
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-stop:
			stopped = true
		case <-ctx.Done():
			stopped = true
		}
		if stopped {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := e.run(ctx, ch)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, &InstanceError{Addr: ch.Addr.String(), Action: ch.Action, Err: err})
				return
			}
			switch ch.Action {
			case plan.Create:
				res.Created++
			case plan.CreateThenDelete:
				res.Replaced++
			case plan.Delete:
				res.Destroyed++
			}
		}()
	}
	wg.Wait()
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	if stopped {
		errs = append(errs, errors.New("interrupted: changes not yet started were skipped; run apply again to finish"))
	}
	return res, errors.Join(errs...)
}

// run carries out one change and reports it to the hook.
func (e *Executor) run(ctx context.Context, ch *plan.Change) error {
	hook := e.hook()
	addr := ch.Addr.String()
	start := time.Now()
	hook.PreApply(addr, ch.Action)
	done := make(chan struct{})
	if every := e.ProgressEvery; every > 0 {
		go func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					hook.Progress(addr, ch.Action, time.Since(start))
				}
			}
		}()
	}
	gen, err := e.change(ctx, ch)
	close(done)
	hook.PostApply(addr, ch.Action, time.Since(start), gen, err)
	return err
}

func (e *Executor) change(ctx context.Context, ch *plan.Change) (int, error) {
	addr := ch.Addr.String()
	unlock, err := e.lockInstance(ctx, addr)
	if err != nil {
		return 0, err
	}
	defer unlock()
	prior, err := e.Store.Get(ctx, addr)
	if err != nil {
		return 0, err
	}
	switch ch.Action {
	case plan.Delete:
		if prior == nil {
			return 0, nil // already gone: destroy is idempotent
		}
		if err := e.Provider.Delete(ctx, prior); err != nil {
			return 0, err
		}
		// The record goes only after its resources are gone.
		return prior.Generation, e.Store.Delete(ctx, addr)
	case plan.Create, plan.CreateThenDelete:
		if ch.Action == plan.Create && ch.Evict && prior != nil {
			// A dead instance may still hold a stopped container or its
			// network; clear them so nothing is orphaned.
			if err := e.Provider.Delete(ctx, prior); err != nil {
				return 0, fmt.Errorf("evict dead instance: %w", err)
			}
		}
		rec, err := e.create(ctx, ch, prior)
		if err != nil {
			return 0, err
		}
		if ch.Action == plan.CreateThenDelete && prior != nil {
			// New before old: the replacement is ready and recorded, so a
			// failure here only leaves a labelled orphan for reap.
			if err := e.Provider.Delete(ctx, prior); err != nil {
				return rec.Generation, fmt.Errorf("replacement is ready, but removing generation %d failed (sandboxer reap will retry): %w", prior.Generation, err)
			}
		}
		return rec.Generation, nil
	}
	return 0, fmt.Errorf("unknown action %v", ch.Action)
}

// create provisions the change's After shape and records it.
func (e *Executor) create(ctx context.Context, ch *plan.Change, prior *state.Record) (*state.Record, error) {
	gen := ch.PriorGeneration + 1
	if prior != nil && prior.Generation >= gen {
		gen = prior.Generation + 1
	}
	made, err := e.Provider.Create(ctx, CreateRequest{
		Address: ch.Addr.String(), Lineage: e.Lineage, Generation: gen, Features: ch.After.Features,
	})
	if err != nil {
		return nil, err
	}
	now := e.now()
	rec := &state.Record{
		Address: ch.Addr.String(), Project: ch.Project,
		Services: ch.After.Services, Features: ch.After.Features,
		AvailableExtensions: made.AvailableExtensions, Credentials: made.Credentials,
		Resources: made.Resources, CreatedAt: now, Generation: gen,
	}
	if ch.TTL > 0 {
		rec.ExpiresAt = now.Add(ch.TTL)
	}
	// Commit even when ctx was cancelled mid-way: the instance exists.
	if err := e.Store.Put(context.WithoutCancel(ctx), rec); err != nil {
		// Not recorded means nobody would remove it: take it down again.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = e.Provider.Delete(cleanup, rec)
		return nil, fmt.Errorf("record in state: %w", err)
	}
	return rec, nil
}

func (e *Executor) hook() Hook {
	if e.Hook == nil {
		return NopHook{}
	}
	return e.Hook
}

func (e *Executor) now() time.Time {
	if e.Now == nil {
		return time.Now().UTC()
	}
	return e.Now().UTC()
}

func actionVerb(a plan.Action) string {
	switch a {
	case plan.Create:
		return "create"
	case plan.CreateThenDelete:
		return "replace"
	case plan.Delete:
		return "destroy"
	}
	return strings.ToLower(a.String())
}
