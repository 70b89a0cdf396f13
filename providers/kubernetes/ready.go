package kubernetes

import (
	"context"
	"fmt"
	"time"
)

// Readiness polling. A failed attempt against a pod IP costs a refused
// connection (well under a millisecond); the backoff grows so that a
// thousand sandboxes starting at once do not spin two cores on probes.
const (
	minBackoff     = 10 * time.Millisecond
	maxBackoff     = 100 * time.Millisecond
	attemptTimeout = 2 * time.Second
)

// pollReady calls attempt until it succeeds or ctx ends. attempt must be
// a real protocol exchange with the handed-out credentials.
func pollReady(ctx context.Context, attempt func(context.Context) error) error {
	backoff := minBackoff
	var last error
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		last = attempt(actx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w; last probe: %w", ctx.Err(), last)
			}
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}
