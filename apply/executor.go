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
	// Data seeds new instances and carries data across replaces; nil
	// when the provider cannot (a plan that needs it then fails).
	Data DataMover
	// ProgressEvery is how often Hook.Progress fires for a running change.
	ProgressEvery time.Duration
}

// Result counts what an apply did.
type Result struct {
	Created, Replaced, Destroyed, Reused int
	// Moved counts the records moved to another address (moved blocks),
	// Forgotten those removed from state with their resources left.
	Moved, Forgotten int
}

// recordMover is a Store that moves a record in one step (state.Backend).
type recordMover interface {
	Move(ctx context.Context, from string, rec *state.Record) error
}

// move carries out a moved block for ch: the record at ch.PrevAddr goes
// to ch.Addr with its resources, data and credentials, which keep the
// labels of the address they were created at (LabelAddress). A record
// found at ch.Addr already and none at PrevAddr is a move done before (an
// apply interrupted after it).
func (e *Executor) move(ctx context.Context, ch *plan.Change) error {
	from, to := ch.PrevAddr, ch.Addr.String()
	m, ok := e.Store.(recordMover)
	if !ok {
		return fmt.Errorf("move %s to %s: the state store cannot move records", from, to)
	}
	unlock, err := e.lockInstance(ctx, from)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := e.Store.Get(ctx, from)
	if err != nil {
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	cur, err := e.Store.Get(ctx, to)
	if err != nil {
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	switch {
	case rec == nil && cur != nil:
		return nil
	case rec == nil:
		return fmt.Errorf("move %s to %s: nothing is recorded at %s any more; plan again", from, to, from)
	case cur != nil:
		return fmt.Errorf("move %s to %s: %s is recorded already; plan again", from, to, to)
	}
	rec.LabelAddress = rec.ResourceAddress()
	rec.Address = to
	if err := m.Move(ctx, from, rec); err != nil {
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	return nil
}

// InstanceError is one instance's failure.
type InstanceError struct {
	Addr   string
	Action plan.Action
	Err    error
}

func (e *InstanceError) Error() string {
	msg := e.Err.Error()
	// Providers wrap their errors as "create ADDR: …" (as they should, on
	// their own); under "ADDR: create:" that only repeats the address.
	for _, verb := range []string{"create", "delete"} {
		msg = strings.TrimPrefix(msg, verb+" "+e.Addr+": ")
	}
	return fmt.Sprintf("%s: %s: %s", e.Addr, actionVerb(e.Action), msg)
}

func (e *InstanceError) Unwrap() error { return e.Err }

// Apply runs every change of p, at most Parallelism at once. Closing stop
// (a first Ctrl-C) stops starting new changes; cancelling ctx (a second
// one) abandons changes in flight, whose providers still clean up after
// themselves. Each finished instance is committed to state at once, so an
// interrupted or partly failed apply keeps what succeeded.
func (e *Executor) Apply(ctx context.Context, stop <-chan struct{}, p *plan.Plan) (Result, error) {
	var (
		res     Result
		mu      sync.Mutex
		errs    []error
		wg      sync.WaitGroup
		skipped []string
	)
	// Moves first, one by one: each is one state write, and the changes
	// below find their records where the plan decided on them.
	for _, ch := range p.Changes {
		if ch.PrevAddr == "" {
			continue
		}
		if err := e.move(ctx, ch); err != nil {
			return res, &InstanceError{Addr: ch.Addr.String(), Action: ch.Action, Err: err}
		}
		res.Moved++
	}
	sem := make(chan struct{}, max(e.Parallelism, 1))
	for _, ch := range p.Changes {
		if ch.Action == plan.NoOp {
			res.Reused++
			continue
		}
		if len(skipped) > 0 || !acquire(ctx, stop, sem) {
			skipped = append(skipped, ch.Addr.String())
			continue
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
			case plan.Forget:
				res.Forgotten++
			}
		}()
	}
	wg.Wait()
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	if len(skipped) > 0 {
		errs = append(errs, &InterruptedError{Skipped: skipped})
	}
	return res, errors.Join(errs...)
}

// InterruptedError reports changes that were never started because the
// apply was interrupted.
type InterruptedError struct {
	Skipped []string // addresses, in plan order
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted: %d change(s) not started (%s); run apply again to finish",
		len(e.Skipped), strings.Join(e.Skipped, ", "))
}

// acquire takes a parallelism slot unless stop is closed or ctx is done.
// An interrupt wins over a free slot: select alone picks at random among
// ready cases, which would sometimes start a change after Ctrl-C.
func acquire(ctx context.Context, stop <-chan struct{}, sem chan struct{}) bool {
	interrupted := func() bool {
		select {
		case <-stop:
			return true
		case <-ctx.Done():
			return true
		default:
			return false
		}
	}
	if interrupted() {
		return false
	}
	select {
	case sem <- struct{}{}:
	case <-stop:
		return false
	case <-ctx.Done():
		return false
	}
	if interrupted() {
		<-sem
		return false
	}
	return true
}

// run carries out one change and reports it to the hook.
func (e *Executor) run(ctx context.Context, ch *plan.Change) error {
	hook := e.hook()
	addr := ch.Addr.String()
	start := time.Now()
	hook.PreApply(addr, ch.Action)
	done := make(chan struct{})
	var ticking sync.WaitGroup
	if every := e.ProgressEvery; every > 0 {
		ticking.Add(1)
		go func() {
			defer ticking.Done()
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
	// No "Still creating..." after the change is reported finished.
	ticking.Wait()
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
	if err := checkPrior(ch, prior); err != nil {
		return 0, err
	}
	switch ch.Action {
	case plan.Forget:
		// The record only: its resources keep running, unmanaged.
		if prior == nil {
			return 0, nil
		}
		if err := e.Store.Delete(ctx, addr); err != nil {
			return prior.Generation, err
		}
		return prior.Generation, nil
	case plan.Delete:
		if prior == nil {
			return 0, nil // already gone: destroy is idempotent
		}
		if err := e.Provider.Delete(ctx, prior); err != nil {
			return 0, err
		}
		// The record goes only after its resources are gone, and it goes
		// even if ctx ended meanwhile: a record of removed resources would
		// make the next plan see a dead sandbox instead of none.
		if err := e.Store.Delete(context.WithoutCancel(ctx), addr); err != nil {
			return prior.Generation, fmt.Errorf("its resources are removed, but removing its state record failed "+
				"(the next plan will see it dead; `sandboxer state rm %s` forgets it): %w", addr, err)
		}
		return prior.Generation, nil
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
			// New before old: the replacement is ready and recorded, so the
			// old generation has no record left and nothing but reap would
			// ever remove it. Finish even after a second Ctrl-C, bounded.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			if err := e.Provider.Delete(dctx, prior); err != nil {
				return rec.Generation, fmt.Errorf("replacement generation %d is ready, but removing generation %d failed (sandboxer reap will retry): %w",
					rec.Generation, prior.Generation, err)
			}
		}
		return rec.Generation, nil
	}
	return 0, fmt.Errorf("unknown action %v", ch.Action)
}

// cleanupTimeout bounds removal work that runs after ctx has ended.
const cleanupTimeout = time.Minute

// checkPrior refuses a change whose state record is not the one the plan
// was made from. Within one locked apply this cannot happen; it guards
// against anything else writing the address meanwhile, since creating over
// an unexpected live record would drop the only pointer to it.
func checkPrior(ch *plan.Change, prior *state.Record) error {
	got := 0
	if prior != nil {
		got = prior.Generation
	}
	if got == ch.PriorGeneration || ((ch.Action == plan.Delete || ch.Action == plan.Forget) && prior == nil) {
		return nil
	}
	describe := func(gen int) string {
		if gen == 0 {
			return "no record"
		}
		return fmt.Sprintf("generation %d", gen)
	}
	return fmt.Errorf("state changed since the plan was made (planned against %s, state now holds %s); nothing was changed, run plan again",
		describe(ch.PriorGeneration), describe(got))
}

// create provisions the change's After shape and records it.
func (e *Executor) create(ctx context.Context, ch *plan.Change, prior *state.Record) (*state.Record, error) {
	gen := ch.PriorGeneration + 1
	made, err := e.Provider.Create(ctx, CreateRequest{
		Address: ch.Addr.String(), Lineage: e.Lineage, Generation: gen,
		// The runtime loads features by name; their generations were
		// checked against the images by the preflight.
		Features: ch.After.Features.Names(),
		Images:   ch.After.Images, Networks: ch.After.Networks, Publish: ch.After.Publish(),
		Database: ch.Database, Runtime: ch.After.Runtime,
	})
	if err != nil {
		return nil, err
	}
	now := e.now()
	rec := &state.Record{
		Address: ch.Addr.String(), Project: ch.Project,
		Services: ch.After.Services, Features: ch.After.Features,
		AvailableExtensions: made.AvailableExtensions, ExtensionVersions: made.ExtensionVersions,
		Credentials: made.Credentials,
		Resources:   made.Resources, CreatedAt: now, Generation: gen,
		SeedDigest: ch.SeedDigest,
		Reach:      ch.After.Reach(),
	}
	if ch.TTL > 0 {
		rec.ExpiresAt = now.Add(ch.TTL)
	}
	// Data goes in before the record: a failure removes the new instance
	// and leaves state (and a replaced instance) as they were.
	if err := e.loadData(ctx, ch, prior, rec); err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := e.Provider.Delete(cleanup, rec); derr != nil {
			return nil, fmt.Errorf("%w; removing the new instance also failed (sandboxer reap will find it by its labels): %w", err, derr)
		}
		return nil, err
	}
	// Commit even when ctx was cancelled mid-way: the instance exists.
	if err := e.Store.Put(context.WithoutCancel(ctx), rec); err != nil {
		// Not recorded means nobody would remove it: take it down again.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := e.Provider.Delete(cleanup, rec); derr != nil {
			return nil, fmt.Errorf("record in state: %w; removing the unrecorded instance also failed (sandboxer reap will find it by its labels): %w", err, derr)
		}
		return nil, fmt.Errorf("record in state: %w; the instance was removed again", err)
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
