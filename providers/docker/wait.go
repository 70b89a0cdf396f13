package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"
)

// Readiness polling: a failed attempt costs a refused connection through the
// engine's port proxy (a millisecond or two), so polling often is cheap, and
// every millisecond between the server becoming ready and the next attempt
// is added to Create. PostgreSQL needs 1.5–3 s, Redis about 100 ms.
const (
	minBackoff     = 10 * time.Millisecond
	maxBackoff     = 25 * time.Millisecond
	attemptTimeout = 2 * time.Second
)

// errExited reports a container that stopped while we waited for it.
var errExited = errors.New("container exited")

// waitReady calls attempt until it succeeds or timeout passes. The engine
// reports the container stopping (a wait request for "not-running"), so a
// container that crashes during start fails at once instead of after the
// whole timeout, without an inspect before every attempt. attempt must be a
// real protocol exchange: the engine's port proxy accepts TCP before the
// server listens, so a connect alone proves nothing.
func (p *Provider) waitReady(ctx context.Context, id string, timeout time.Duration, attempt func(context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exited, waitErr := p.cli.ContainerWait(wctx, id, container.WaitConditionNotRunning)
	// The client's goroutine delivers exactly one value (an error once wctx
	// ends, at the latest). Unless the loop took it, take it after return so
	// that goroutine never blocks on a channel nobody reads.
	consumed := false
	defer func() {
		if !consumed {
			go func() {
				select {
				case <-exited:
				case <-waitErr:
				}
			}()
		}
	}()
	backoff := minBackoff
	var last error
	for {
		actx, acancel := context.WithTimeout(wctx, attemptTimeout)
		last = attempt(actx)
		acancel()
		if last == nil {
			return nil
		}
		select {
		case r := <-exited:
			consumed = true
			return fmt.Errorf("%w with code %d before it was ready", errExited, r.StatusCode)
		case err := <-waitErr:
			consumed = true
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if wctx.Err() != nil {
				return notReady(timeout, last)
			}
			return p.engineErr("wait for container", err)
		case <-wctx.Done():
			if err := ctx.Err(); err != nil {
				return err
			}
			return notReady(timeout, last)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

func notReady(timeout time.Duration, last error) error {
	if last == nil {
		return fmt.Errorf("not ready after %s", timeout)
	}
	return fmt.Errorf("not ready after %s; last probe: %w", timeout, last)
}
