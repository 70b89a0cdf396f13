package docker

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Readiness polling: quick first retries (a warm Redis answers in a few
// milliseconds), then at most every maxBackoff.
const (
	minBackoff     = 25 * time.Millisecond
	maxBackoff     = 100 * time.Millisecond
	attemptTimeout = 2 * time.Second
)

// errExited reports a container that stopped while we waited for it.
var errExited = errors.New("container exited")

// waitReady calls attempt until it succeeds or timeout passes. Before every
// attempt it checks the container is still running, so a container that
// crashes during start fails at once instead of after the whole timeout.
// attempt must be a real protocol exchange: the engine's port proxy accepts
// TCP before the server listens, so a connect alone proves nothing.
func (p *Provider) waitReady(ctx context.Context, id string, timeout time.Duration, attempt func(context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	backoff := minBackoff
	var last error
	for {
		ci, err := p.cli.ContainerInspect(wctx, id)
		if err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				return notReady(timeout, last)
			}
			return p.engineErr("inspect container", err)
		}
		if ci.State != nil && !ci.State.Running {
			return fmt.Errorf("%w with code %d (%s) before it was ready", errExited, ci.State.ExitCode, ci.State.Status)
		}
		actx, acancel := context.WithTimeout(wctx, attemptTimeout)
		last = attempt(actx)
		acancel()
		if last == nil {
			return nil
		}
		select {
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
