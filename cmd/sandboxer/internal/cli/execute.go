package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// errCancelled is a declined confirmation: nothing changed, exit 1.
var errCancelled = errors.New("cancelled: nothing was changed")

// confirm asks for "yes" on stdin, as Terraform does.
func confirm(f *Factory, question string) error {
	fmt.Fprintf(f.IO.Out, "\n%s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", f.Color().Bold(question))
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	fmt.Fprintln(f.IO.Out)
	if strings.TrimSpace(line) != "yes" {
		if err != nil && line == "" {
			return fmt.Errorf("%w (no answer on standard input; use --auto-approve to skip the question)", errCancelled)
		}
		return errCancelled
	}
	return nil
}

// execute runs a plan's changes against the provider, printing progress.
func execute(f *Factory, store *state.Store, prov apply.Provider, p *plan.Plan, parallelism int) (apply.Result, error) {
	lineage, err := store.EnsureLineage(f.hard)
	if err != nil {
		return apply.Result{}, err
	}
	e := &apply.Executor{
		Provider: prov, Store: store, Lineage: lineage,
		Hook:        views.NewApplyHook(f.IO.Err, f.ErrColor()),
		Parallelism: parallelism, Now: f.Now, ProgressEvery: 5 * time.Second,
	}
	e.Data = dataMover(f, prov)
	return e.Apply(f.hard, f.Interrupt, p)
}

// dataMover seeds and carries data through prov, with the snapshots next
// to the state file; nil when prov cannot move data.
func dataMover(f *Factory, prov apply.Provider) apply.DataMover {
	if m, ok := snapshot.MoverFor(prov, sandboxer.SnapshotStore(f.StatePath()), f.Dir()); ok {
		return m
	}
	return nil
}

// ensureProvider returns the planned provider or connects one.
func ensureProvider(ctx context.Context, f *Factory, p *planned) (apply.Provider, error) {
	if p.provider != nil {
		return p.provider, nil
	}
	prov, err := f.NewProvider(ctx, p.cfg.Provider, f.Catalog)
	if err != nil {
		return nil, err
	}
	p.provider = prov
	return prov, nil
}

// outputValues evaluates outputs against state, for printing after apply
// and for `output`.
func outputValues(cfg *config.Config, snap *state.Snapshot) (map[string]cty.Value, hcl.Diagnostics) {
	vals := map[config.Address]map[string]map[string]string{}
	for _, r := range snap.Records {
		addr, err := config.ParseAddress(r.Address)
		if err != nil {
			continue
		}
		svcs := map[string]map[string]string{}
		for svc, c := range r.Credentials {
			svcs[svc] = c.Attributes(svc)
		}
		vals[addr] = svcs
	}
	return cfg.EvalOutputs(vals)
}
