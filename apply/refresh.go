package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Refresh probes every cached instance through the provider, at most
// parallelism at a time, and reports what it saw as plan input.
func Refresh(ctx context.Context, p Provider, snap *state.Snapshot, parallelism int) (plan.Observed, error) {
	if parallelism < 1 {
		parallelism = 1
	}
	obs := make(plan.Observed, len(snap.Records))
	var engineErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallelism)
	for addr, rec := range snap.Records {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			o := plan.Observation{Alive: true}
			err := p.Probe(ctx, rec)
			if err != nil {
				o.Alive = false
				o.Detail = err.Error()
				if errors.Is(err, ErrNotFound) {
					o.Detail = "its containers are gone"
				}
			}
			mu.Lock()
			defer mu.Unlock()
			obs[addr] = o
			if errors.Is(err, ErrEngine) && engineErr == nil {
				engineErr = err
			}
		}()
	}
	wg.Wait()
	// A cancelled refresh, or an engine that stopped answering, would make
	// every instance look dead.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("refresh: %w", err)
	}
	if engineErr != nil {
		return nil, fmt.Errorf("refresh: %w", engineErr)
	}
	return obs, nil
}
