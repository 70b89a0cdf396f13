package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// DataMover puts data into a freshly provisioned instance before it is
// recorded. package snapshot implements it over the provider's engine.
type DataMover interface {
	// Carry copies every service's data of from into to, its replacement.
	Carry(ctx context.Context, from, to *state.Record) error
	// Seed loads seed into rec.
	Seed(ctx context.Context, rec *state.Record, seed *config.Seed) error
}

// SeedChecker is a DataMover that can tell, before anything is created,
// whether a seed fits what an instance will have (a snapshot with vector
// columns does not fit an instance without vector).
type SeedChecker interface {
	CheckSeed(ctx context.Context, addr string, services []string, features config.FeatureSet, seed *config.Seed) error
}

// SeedMisfitError lists every planned instance whose seed does not fit
// it. Nothing has been created when it is returned.
type SeedMisfitError struct {
	Errs []error // one per instance, each naming its address
}

func (e *SeedMisfitError) Error() string { return errors.Join(e.Errs...).Error() }

// Unwrap lets errors.Is and errors.As see each instance's error.
func (e *SeedMisfitError) Unwrap() []error { return e.Errs }

// checkSeeds runs data's seed check (when it has one) for every create and
// replace that will load a seed, and returns every misfit at once as a
// *SeedMisfitError.
func checkSeeds(ctx context.Context, data DataMover, changes []*plan.Change) error {
	sc, ok := data.(SeedChecker)
	if !ok {
		return nil
	}
	var errs []error
	for _, ch := range changes {
		if (ch.Action != plan.Create && ch.Action != plan.CreateThenDelete) || ch.After == nil || ch.Seed == nil {
			continue
		}
		if ch.CarryData && ch.Action == plan.CreateThenDelete {
			continue // the old instance's data is carried instead
		}
		if err := sc.CheckSeed(ctx, ch.Addr.String(), ch.After.Services, ch.After.Features, ch.Seed); err != nil {
			errs = append(errs, fmt.Errorf("%s: seed: %w", ch.Addr, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &SeedMisfitError{Errs: errs}
}

// loadData carries the old instance's data into its replacement or, when
// nothing is carried, loads the seed. Carried data already holds what the
// seed put into the old instance (the plan carries only when the seed is
// unchanged).
func (e *Executor) loadData(ctx context.Context, ch *plan.Change, prior, rec *state.Record) error {
	carry := ch.CarryData && ch.Action == plan.CreateThenDelete && prior != nil
	if !carry && ch.Seed == nil {
		return nil
	}
	if e.Data == nil {
		return errors.New("this provider cannot seed or carry data")
	}
	if carry {
		if err := e.Data.Carry(ctx, prior, rec); err != nil {
			return fmt.Errorf("%w; generation %d is kept, unchanged", err, prior.Generation)
		}
		return nil
	}
	if err := e.Data.Seed(ctx, rec, ch.Seed); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}
