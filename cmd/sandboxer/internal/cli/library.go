package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// The CLI parses flags, calls the library (package sandboxer, the one
// orchestrator) and renders what it returns. This file is where a command
// gets its library and turns its errors into what the user reads.

// library opens the library over cfg for one command: the CLI's state
// path, catalog, clock and environment, progress on stderr, and the first
// Ctrl-C as the apply's interrupt.
// forward is set by the commands that hand out URLs for as long as they
// run (serve, mcp, connect): Kubernetes sandboxes are then handed out
// through forwarded local ports where the endpoint setting says so.
func (f *Factory) library(cfg *config.Config, lockTimeout time.Duration, sink events.Sink, forward ...bool) (*sandboxer.Sandboxer, error) {
	// --state as given: the library takes a relative path as relative to
	// the configuration directory, as f.StatePath does, and messages
	// name the state file as the user wrote it.
	return sandboxer.FromConfig(f.Dir(), cfg, sandboxer.Options{
		StatePath: f.Global.State, Backend: f.Store(), Catalog: f.Catalog, Environ: f.Environ, Now: f.Now,
		LockTimeout: lockTimeout, Events: sink,
		PullProgress: f.IO.Err, // stdout stays the plan
		Hook:         views.NewApplyHook(f.IO.Err, f.ErrColor()), ProgressEvery: 5 * time.Second,
		Interrupt: f.Interrupt,
		Forward:   len(forward) > 0 && forward[0],
	}), nil
}

// planOptions turns the shared planning flags into the library's.
func (o PlanningOptions) planOptions(destroy bool) sandboxer.PlanOptions {
	return sandboxer.PlanOptions{NoRefresh: !o.Refresh, Targets: o.Targets, Replace: o.Replace, Destroy: destroy}
}

// planFailed renders what the library refused while planning (diagnostics
// at their place in the configuration, features the images lack, feature
// sets no default image provides) and
// explains what to do about a lock or an unreachable engine; operation is
// the command's name.
func planFailed(f *Factory, cfg *config.Config, operation string, err error) error {
	var ce *sandboxer.ConfigError
	if errors.As(err, &ce) {
		renderDiags(f, cfg, ce.Diagnostics)
		return errReported
	}
	var ue *plan.UnprovidableError
	var ne *plan.NoImageError
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return unprovidable(f, err, cfg)
	}
	var le *state.LockedError
	if errors.As(err, &le) {
		return lockError(err)
	}
	var re *sandboxer.RefreshError
	if errors.As(err, &re) && operation == "plan" {
		return fmt.Errorf("%w (use --refresh=false to plan without the engine)", err)
	}
	return err
}
