package cli

import (
	"context"
	"errors"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/config"
)

// errLoadInterrupted ends a command whose configuration was still being
// evaluated when a signal came.
var errLoadInterrupted = errors.New("interrupted: the configuration was not fully loaded, so nothing was checked or changed")

// loadInterruptible loads the configuration until ctx is done. The
// evaluation itself stops at its next function call once ctx is done; the
// caller does not wait even for that, because an expression without
// function calls (a nested for expression) can run long between checks.
// Loading reads files and builds values only, so abandoning it is safe.
func loadInterruptible(ctx context.Context, f *Factory, in config.Input) (*config.Config, hcl.Diagnostics, error) {
	type result struct {
		cfg   *config.Config
		diags hcl.Diagnostics
	}
	done := make(chan result, 1)
	go func() {
		cfg, diags := config.LoadContext(ctx, f.Dir(), in, f.Catalog)
		done <- result{cfg, diags}
	}()
	select {
	case r := <-done:
		if ctx.Err() != nil {
			return nil, nil, errLoadInterrupted
		}
		return r.cfg, r.diags, nil
	case <-ctx.Done():
		return nil, nil, errLoadInterrupted
	}
}

// interruptContext is done at the first signal: commands that load a
// configuration before doing anything stop loading then.
func interruptContext(f *Factory) (context.Context, context.CancelFunc) {
	parent := f.hard
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	if f.Interrupt != nil {
		go func() {
			select {
			case <-f.Interrupt:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}
