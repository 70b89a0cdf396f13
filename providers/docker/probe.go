package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/services"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/state"
)

// Probe checks that every service of a recorded instance answers a
// protocol probe with the handed-out credentials (PostgreSQL SELECT 1,
// Redis AUTH + PING), all services at once. The credentials are unique to
// the instance, so a successful login is proof enough that its container
// runs; only a failed probe asks the engine why, so that a container that
// no longer exists gives an error wrapping apply.ErrNotFound and an engine
// that cannot be reached one wrapping apply.ErrEngine. A running container
// whose service answered too slowly is asked again with more time (the
// machine may be loaded) before the probe fails.
func (p *Provider) Probe(ctx context.Context, rec *state.Record) error {
	if rec == nil {
		return errors.New("probe: no record")
	}
	var scrub redact.Scrubber
	for _, c := range rec.Credentials {
		scrub.Add(c.Password, c.AdminPassword)
	}
	svcs := slices.Sorted(maps.Keys(rec.Credentials))
	errs := make([]error, len(svcs))
	var wg sync.WaitGroup
	for i, svc := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.probeService(ctx, rec, svc); err != nil {
				errs[i] = scrub.Err(fmt.Errorf("probe %s: %s: %w", rec.Address, svc, err))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first service in name order, for stable messages
		}
	}
	return nil
}

func (p *Provider) probeService(ctx context.Context, rec *state.Record, svc string) error {
	id := rec.Resources.Containers[svc]
	if id == "" {
		return fmt.Errorf("no container recorded: %w", apply.ErrNotFound)
	}
	perr := p.protocolProbe(ctx, rec.Credentials[svc], svc)
	if perr == nil {
		return nil
	}
	ci, err := p.cli.ContainerInspect(ctx, id)
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("container %s: %w", shortID(id), apply.ErrNotFound)
	}
	if err != nil {
		return p.engineErr("inspect container "+shortID(id), err)
	}
	if ci.State == nil || !ci.State.Running {
		status, code := "not running", 0
		if ci.State != nil {
			status, code = ci.State.Status, ci.State.ExitCode
		}
		return fmt.Errorf("container %s is %s (exit code %d)", trimSlash(ci.Name), status, code)
	}
	// The container runs but did not answer in time: on a loaded machine
	// a login can take longer than the probe's timeout, and calling the
	// sandbox dead would replace it under the agent that holds it, with
	// new credentials. Ask again, with the timeout scaled by the load and
	// doubled each time, before giving up.
	for i := 1; i <= probeRetries && isSlowAnswer(perr) && ctx.Err() == nil; i++ {
		t := adaptTimeout(p.probeTimeout(), p.loadFactor()) * time.Duration(1<<i)
		if perr = p.protocolProbeWithin(ctx, rec.Credentials[svc], svc, t); perr == nil {
			return nil
		}
	}
	return perr
}

// probeRetries is how often a running container's probe is asked again
// when it answered too slowly.
const probeRetries = 2

// isSlowAnswer reports a probe that ran out of time or lost its
// connection, rather than one the service refused (wrong credentials).
func isSlowAnswer(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"timeout", "deadline exceeded", "connection reset", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func (p *Provider) protocolProbe(ctx context.Context, c state.Credentials, svc string) error {
	return p.protocolProbeWithin(ctx, c, svc, p.probeTimeout())
}

func (p *Provider) protocolProbeWithin(ctx context.Context, c state.Credentials, svc string, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tlsConf, err := clientTLS(c, c.Host)
	if err != nil {
		return err
	}
	s, ok := services.Lookup(svc)
	if !ok {
		return fmt.Errorf("service %s is not supported by the docker provider", svc)
	}
	return s.Ping(pctx, c, tlsConf)
}
