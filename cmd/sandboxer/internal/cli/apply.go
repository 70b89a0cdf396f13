package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/plan"
)

// ApplyOptions are the flags of `sandboxer apply`.
type ApplyOptions struct {
	f           *Factory
	Planning    PlanningOptions
	PlanFile    string
	AutoApprove bool
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
	cmd.Flags().IntVar(&opts.Planning.Parallelism, "parallelism", 4, "how many sandboxes to change at once")
	return cmd
}

func applyRun(cmd *cobra.Command, opts *ApplyOptions) error {
	f := opts.f
	p, err := makePlan(cmd.Context(), f, opts.Planning, "apply", false)
	if err != nil {
		return err
	}
	defer p.close()
	views.PlanText(f.IO.Out, p.plan, f.Color())
	if p.plan.HasChanges() {
		if !opts.AutoApprove {
			if err := confirm(f, "Do you want to perform these actions?"); err != nil {
				return err
			}
		}
		prov, err := ensureProvider(cmd.Context(), f, p)
		if err != nil {
			return err
		}
		res, err := execute(f, p.store, prov, p.plan, opts.Planning.Parallelism)
		printApplyResult(f, res, err)
		if err != nil {
			return &ExitError{Code: 1, Err: err}
		}
	} else {
		fmt.Fprintln(f.IO.Out, "\nNo changes. Every sandbox is cached and covers what the configuration asks for.")
	}
	return printOutputs(cmd, f, p)
}

func applySavedRun(cmd *cobra.Command, opts *ApplyOptions) error {
	f := opts.f
	// A saved plan already fixed variables, targets and replacements;
	// accepting them here would suggest they changed something.
	for _, name := range []string{"var", "var-file", "target", "replace", "refresh"} {
		if cmd.Flags().Changed(name) {
			return &ExitError{Code: 1, Err: usageError(cmd, fmt.Errorf("--%s cannot be used when applying a saved plan: it was fixed when the plan was made", name))}
		}
	}
	file, err := readPlanFile(f, opts.PlanFile)
	if err != nil {
		return err
	}
	if err := checkConfigUnchanged(f, opts.PlanFile, file); err != nil {
		return err
	}
	store := f.Store()
	unlock, err := store.Lock(cmd.Context(), "apply", opts.Planning.LockTimeout)
	if err != nil {
		return lockError(err)
	}
	defer unlock()
	if err := store.ExpectLineage(cmd.Context(), file.Lineage, file.Serial); err != nil {
		return fmt.Errorf("saved plan %s is stale: %w; run sandboxer plan again", opts.PlanFile, err)
	}
	p := file.Plan()
	if !p.HasChanges() {
		fmt.Fprintln(f.IO.Out, "No changes in the saved plan.")
		return nil
	}
	prov, err := f.NewProvider(cmd.Context(), file.Provider, f.Catalog)
	if err != nil {
		return err
	}
	if c, ok := prov.(interface{ Close() error }); ok {
		defer c.Close()
	}
	if err := apply.Preflight(cmd.Context(), prov, p.Changes, dataMover(f, prov)); err != nil {
		return unprovidable(f, err, nil)
	}
	res, err := execute(f, store, prov, p, opts.Planning.Parallelism)
	printApplyResult(f, res, err)
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	// Outputs come from the configuration the plan was made from.
	sources := make(map[string][]byte, len(file.Sources))
	for name, src := range file.Sources {
		sources[name] = []byte(src)
	}
	cfg, diags := config.LoadSources(f.Dir(), sources, config.Input{Environ: f.Environ}, f.Catalog)
	if diags.HasErrors() {
		fmt.Fprintln(f.IO.Out, "\nOutputs are not shown: the saved configuration needs its variables again; run sandboxer output.")
		return nil
	}
	return printOutputs(cmd, f, &planned{cfg: cfg, store: store})
}

// checkConfigUnchanged refuses a saved plan whose configuration files
// differ from those in the configuration directory now: the plan would
// carry out decisions the current configuration no longer makes, and its
// outputs would come from files that are no longer there.
func checkConfigUnchanged(f *Factory, name string, file *plan.File) error {
	current, diags := config.ReadSources(f.Dir())
	if diags.HasErrors() {
		renderDiags(f, nil, diags)
		return errReported
	}
	if plan.SourcesDigest(current) == file.ConfigDigest {
		return nil
	}
	var changed []string
	for n, src := range current {
		if saved, ok := file.Sources[n]; !ok || saved != string(src) {
			changed = append(changed, n)
		}
	}
	for n := range file.Sources {
		if _, ok := current[n]; !ok {
			changed = append(changed, n+" (removed)")
		}
	}
	sort.Strings(changed)
	return fmt.Errorf("saved plan %s was made from another configuration than the one in %s now (changed: %s); nothing was changed, run sandboxer plan again",
		name, displayDirName(f.Dir()), strings.Join(changed, ", "))
}

// displayDirName names a configuration directory in messages.
func displayDirName(dir string) string {
	if dir == "" || dir == "." {
		return "the current directory"
	}
	return dir
}

func printApplyResult(f *Factory, res apply.Result, err error) {
	c := f.Color()
	if err != nil {
		fmt.Fprintln(f.IO.Out, c.Red(c.Bold("\nApply failed.")))
	} else {
		fmt.Fprintln(f.IO.Out, c.Green(c.Bold("\nApply complete!")))
	}
	fmt.Fprintf(f.IO.Out, "Sandboxes: %d created, %d replaced, %d destroyed, %d reused.\n",
		res.Created, res.Replaced, res.Destroyed, res.Reused)
}

// printOutputs shows outputs after an apply; sensitive ones stay hidden.
func printOutputs(cmd *cobra.Command, f *Factory, p *planned) error {
	if len(p.cfg.Outputs) == 0 {
		return nil
	}
	// Not cmd.Context(): a Ctrl-C after the last change started ends it,
	// yet the apply finished and its outputs are worth showing.
	snap, err := p.store.Snapshot(context.WithoutCancel(cmd.Context()))
	if err != nil {
		return err
	}
	vals, diags := outputValues(p.cfg, snap)
	if diags.HasErrors() {
		renderDiags(f, p.cfg, diags)
		return errReported
	}
	fmt.Fprintln(f.IO.Out, "\nOutputs:")
	views.Outputs(f.IO.Out, p.cfg.Outputs, vals)
	return nil
}
