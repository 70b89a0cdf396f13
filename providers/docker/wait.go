package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/sandboxer/sandboxer/apply"
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

// waitReady calls attempt until it succeeds or the readiness timeout
// passes. The engine reports the container stopping (a wait request for
// "not-running"), so a container that crashes during start fails at once
// instead of after the whole timeout, without an inspect before every
// attempt. attempt must be a real protocol exchange: the engine's port
// proxy accepts TCP before the server listens, so a connect alone proves
// nothing.
//
// timeout is the base: unless the call asked for its own
// (apply.WithReadyTimeout), it is scaled by how loaded the machine is
// (loadFactor), looked at again when it runs out, so a burst of cold
// starts on a busy machine gets the time it needs, up to a ceiling.
func (p *Provider) waitReady(ctx context.Context, id string, timeout time.Duration, attempt func(context.Context) error) error {
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	start := time.Now()
	limit := func() time.Duration {
		if d := apply.ReadyTimeout(ctx); d > 0 {
			return d
		}
		return adaptTimeout(timeout, p.loadFactor())
	}
	allowed := limit()
	wctx, cancel := context.WithCancel(ctx)
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
		if time.Since(start) >= allowed {
			if again := limit(); again > allowed {
				allowed = again // the machine got busier meanwhile
			} else {
				return notReady(allowed, last)
			}
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
			return p.engineErr("wait for container", err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// notReady is transient (apply.ErrTransient): the same request may well
// succeed on a machine less busy, and the front ends answer it as
// unavailable with what to do.
func notReady(timeout time.Duration, last error) error {
	hint := "the machine may be busy: try again, or allow more time (ready_timeout per request, SANDBOXER_READY_TIMEOUT)"
	if last == nil {
		return fmt.Errorf("not ready after %s; %s: %w", timeout.Round(time.Second), hint, apply.ErrTransient)
	}
	return fmt.Errorf("not ready after %s (last probe: %v); %s: %w", timeout.Round(time.Second), last, hint, apply.ErrTransient)
}
