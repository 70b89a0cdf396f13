package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// ApplyOptions are the flags of `sandboxer apply`.
type ApplyOptions struct {
	f           *Factory
	Planning    PlanningOptions
	PlanFile    string
	AutoApprove bool
	// FailOnCheck refuses to apply a plan a check block's assertion
	// fails on (as plan --fail-on-check refuses to save it).
	FailOnCheck bool
}

func newApplyCmd(f *Factory, runF func(*ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "apply [PLANFILE]",
		Short: "Create, replace and destroy sandboxes to match the configuration",
		Long: "Without PLANFILE: refresh, plan and show the plan as sandboxer plan does, ask for\n" +
			"\"yes\" (unless --auto-approve), then carry it out: new sandboxes first, a\n" +
			"replacement ready before the one it replaces is removed, at most\n" +
			"--parallelism at once. With PLANFILE (from plan --out): carry out exactly\n" +
			"that plan; it is refused if the state or the configuration files changed\n" +
			"since it was made. Outputs are printed at the end, sensitive ones hidden.\n" +
			"For machine-readable results use plan --json / show --json with a saved plan,\n" +
			"then state list --json.",
		Example: "  sandboxer apply\n" +
			"  sandboxer apply --auto-approve --var ttl=2h\n" +
			"  sandboxer plan --out ci.plan && sandboxer apply ci.plan",
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.PlanFile = args[0]
			}
			if err := checkParallelism(cmd, opts.Planning.Parallelism); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.PlanFile != "" {
				return applySavedRun(cmd, opts)
			}
			return applyRun(cmd, opts)
		},
	}
	opts.Planning.bind(cmd.Flags())
	cmd.Flags().BoolVar(&opts.AutoApprove, "auto-approve", false, "skip the interactive 'yes'")
	cmd.Flags().BoolVar(&opts.FailOnCheck, "fail-on-check", false, "change nothing (exit 1) when a check block's assertion fails")
	cmd.Flags().IntVar(&opts.Planning.Parallelism, "parallelism", 4, "how many sandboxes to change at once")
	return cmd
}

func applyRun(cmd *cobra.Command, opts *ApplyOptions) error {
	f := opts.f
	cfg, err := loadConfig(f, opts.Planning.Vars)
	if err != nil {
		return err
	}
	lib, err := f.library(cfg, opts.Planning.LockTimeout, nil)
	if err != nil {
		return err
	}
	defer lib.Close()
	// The hard context: the first Ctrl-C stops planning and new changes
	// (the library's Interrupt); only the second abandons work in flight.
	confirmed := false
	p, res, err := lib.PlanAndApply(f.hard, opts.Planning.planOptions(false), sandboxer.ApplyOptions{
		Parallelism: opts.Planning.Parallelism,
		Confirm: func(p *plan.Plan) error {
			confirmed = true
			views.PlanText(f.IO.Out, p, f.Color())
			// Check blocks judge the plan before anything changes, as
			// plan shows them.
			if checks := runChecks(cfg, p, opts.FailOnCheck); len(checks) > 0 {
				renderDiags(f, cfg, checks)
				if checks.HasErrors() {
					return errChecksFailed
				}
			}
			if !p.HasChanges() || opts.AutoApprove {
				return nil
			}
			return confirm(f, "Do you want to perform these actions?")
		},
	})
	switch {
	case !confirmed:
		return planFailed(f, cfg, "apply", err)
	case errors.Is(err, errCancelled):
		return err
	case errors.Is(err, errChecksFailed):
		fmt.Fprintln(f.IO.Out, "\nNothing was changed: a check block's assertion failed (--fail-on-check).")
		return errReported
	case !p.HasChanges():
		fmt.Fprintln(f.IO.Out, "\nNo changes. Every sandbox is cached and covers what the configuration asks for.")
	default:
		printApplyResult(f, res, err)
		if err != nil {
			return &ExitError{Code: 1, Err: err}
		}
	}
	return printOutputs(cmd, f, cfg, lib.Store())
}

func applySavedRun(cmd *cobra.Command, opts *ApplyOptions) error {
	f := opts.f
	// A saved plan already fixed variables, targets and replacements;
	// accepting them here would suggest they changed something.
	for _, name := range []string{"var", "var-file", "target", "replace", "refresh", "fail-on-check"} {
		if cmd.Flags().Changed(name) {
			return &ExitError{Code: 1, Err: usageError(cmd, fmt.Errorf("--%s cannot be used when applying a saved plan: it was fixed when the plan was made", name))}
		}
	}
	file, err := readPlanFile(f, opts.PlanFile)
	if err != nil {
		return err
	}
	// Outputs come from the configuration the plan was made from.
	sources := make(map[string][]byte, len(file.Sources))
	for name, src := range file.Sources {
		sources[name] = []byte(src)
	}
	cfg, diags := config.LoadSources(f.Dir(), sources, config.Input{Environ: f.Environ}, f.Catalog)
	if diags.HasErrors() {
		cfg = nil
	}
	lib, err := f.library(cfg, opts.Planning.LockTimeout, nil)
	if err != nil {
		return err
	}
	defer lib.Close()
	started := false
	res, err := lib.ApplyFile(f.hard, file, sandboxer.ApplyOptions{
		Parallelism: opts.Planning.Parallelism, PlanName: "saved plan " + opts.PlanFile,
		Confirm: func(p *plan.Plan) error {
			started = true
			// Warnings only: a plan saved by plan --fail-on-check passed.
			if checks := runChecks(cfg, p, false); len(checks) > 0 {
				renderDiags(f, cfg, checks)
			}
			return nil
		},
	})
	if !started {
		if err != nil {
			return planFailed(f, nil, "apply", err)
		}
		fmt.Fprintln(f.IO.Out, "No changes in the saved plan.")
		return nil
	}
	printApplyResult(f, res, err)
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	if cfg == nil {
		fmt.Fprintln(f.IO.Out, "\nOutputs are not shown: the saved configuration needs its variables again; run sandboxer output.")
		return nil
	}
	return printOutputs(cmd, f, cfg, lib.Store())
}

// errChecksFailed ends an apply --fail-on-check whose plan fails a check
// block's assertion, before anything changed.
var errChecksFailed = errors.New("a check block's assertion failed")

func printApplyResult(f *Factory, res apply.Result, err error) {
	c := f.Color()
	if err != nil {
		fmt.Fprintln(f.IO.Out, c.Red(c.Bold("\nApply failed.")))
	} else {
		fmt.Fprintln(f.IO.Out, c.Green(c.Bold("\nApply complete!")))
	}
	extra := ""
	if res.Moved > 0 {
		extra += fmt.Sprintf(", %d moved", res.Moved)
	}
	if res.Forgotten > 0 {
		extra += fmt.Sprintf(", %d forgotten", res.Forgotten)
	}
	fmt.Fprintf(f.IO.Out, "Sandboxes: %d created, %d replaced, %d destroyed, %d reused%s.\n",
		res.Created, res.Replaced, res.Destroyed, res.Reused, extra)
}

// printOutputs shows outputs after an apply; sensitive ones stay hidden.
func printOutputs(cmd *cobra.Command, f *Factory, cfg *config.Config, store state.Backend) error {
	if len(cfg.Outputs) == 0 {
		return nil
	}
	// Not cmd.Context(): a Ctrl-C after the last change started ends it,
	// yet the apply finished and its outputs are worth showing.
	snap, err := store.Snapshot(context.WithoutCancel(cmd.Context()))
	if err != nil {
		return err
	}
	vals, diags := sandboxer.OutputValues(cfg, snap)
	if diags.HasErrors() {
		renderDiags(f, cfg, diags)
		return errReported
	}
	fmt.Fprintln(f.IO.Out, "\nOutputs:")
	views.Outputs(f.IO.Out, cfg.Outputs, vals)
	return nil
}
