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
