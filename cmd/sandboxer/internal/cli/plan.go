package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/plan"
)

// PlanningOptions are the flags shared by plan, apply and destroy.
type PlanningOptions struct {
	Vars        VarOptions
	Refresh     bool
	Targets     []string
	Replace     []string
	LockTimeout time.Duration
	Parallelism int
}

// PlanOptions are the flags of `sandboxer plan`.
type PlanOptions struct {
	f                *Factory
	Planning         PlanningOptions
	Out              string
	JSON             bool
	DetailedExitcode bool
	Destroy          bool
	// FailOnCheck makes a failed check block assertion an error.
	FailOnCheck bool
}

func (o *PlanningOptions) bind(fs *pflag.FlagSet) {
	o.Vars.bind(fs)
	fs.BoolVar(&o.Refresh, "refresh", true, "check cached sandboxes are alive before planning")
	fs.StringArrayVar(&o.Targets, "target", nil, "limit to this sandbox `ADDR` (repeatable)")
	fs.StringArrayVar(&o.Replace, "replace", nil, "force replacement of sandbox `ADDR` (repeatable)")
	fs.DurationVar(&o.LockTimeout, "lock-timeout", 0, "wait this long for the state lock (0: fail at once)")
}

func newPlanCmd(f *Factory, runF func(*PlanOptions) error) *cobra.Command {
	opts := &PlanOptions{f: f}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would do, sandbox by sandbox, and why",
		Long: "Refresh every cached sandbox (is it running and answering with its\n" +
			"credentials?), then compare the configuration with state by the cache rule and\n" +
			"show, per sandbox, whether it is created, reused, replaced (and why:\n" +
			"a missing service or feature, a changed database name, expiry, --replace) or\n" +
			"destroyed. Secrets never appear. --out saves the plan for apply; --json prints\n" +
			"Terraform's JSON plan shape; --detailed-exitcode exits 2 when there are\n" +
			"changes.",
		Example: "  sandboxer plan\n" +
			"  sandboxer plan --out ci.plan --var ttl=2h\n" +
			"  sandboxer plan --json | jq '.resource_changes[] | {address, action_reason}'\n" +
			"  sandboxer plan --detailed-exitcode --refresh=false",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return planRun(cmd, opts)
		},
	}
	fs := cmd.Flags()
	opts.Planning.bind(fs)
	fs.StringVar(&opts.Out, "out", "", "save the plan to `FILE` for a later apply")
	fs.BoolVar(&opts.JSON, "json", false, "print the plan as JSON")
	fs.BoolVar(&opts.DetailedExitcode, "detailed-exitcode", false, "exit 0 when nothing changes, 2 when something does")
	fs.BoolVar(&opts.Destroy, "destroy", false, "plan the removal of every sandbox")
	fs.BoolVar(&opts.FailOnCheck, "fail-on-check", false, "fail (exit 1, no plan saved) when a check block's assertion fails")
	return cmd
}

// runChecks evaluates the check blocks on p, keeps their results in it
// (saved with it, in its JSON) and returns their problems: warnings, or
// errors when asErrors (--fail-on-check).
func runChecks(cfg *config.Config, p *plan.Plan, asErrors bool) hcl.Diagnostics {
	if cfg == nil || len(cfg.Checks) == 0 {
		return nil
	}
	sb, pv := plan.CheckValues(p)
	results := cfg.RunChecks(sb, pv, asErrors)
	p.Checks = plan.CheckResults(results)
	var diags hcl.Diagnostics
	for _, r := range results {
		diags = append(diags, r.Problems...)
	}
	return diags
}

func planRun(cmd *cobra.Command, opts *PlanOptions) error {
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
	p, err := lib.Plan(cmd.Context(), opts.Planning.planOptions(opts.Destroy))
	if err != nil {
		return planFailed(f, cfg, "plan", err)
	}
	// Check blocks judge the plan; with --fail-on-check a failure keeps
	// it from being saved.
	checks := runChecks(cfg, p, opts.FailOnCheck)
	if opts.Out != "" && !checks.HasErrors() {
		file := plan.NewFile(p, cfg, Version, f.Now())
		b, err := file.Encode()
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.Path(opts.Out), b, 0o600); err != nil {
			return fmt.Errorf("save plan: %w", err)
		}
	}
	if opts.JSON {
		if err := views.PlanJSON(f.IO.Out, p, Version); err != nil {
			return err
		}
	} else {
		views.PlanText(f.IO.Out, p, f.Color())
		if opts.Out != "" && !checks.HasErrors() {
			fmt.Fprintf(f.IO.Out, "\nSaved the plan to: %s\n\nTo perform exactly these actions, run:\n  sandboxer apply %s\n", opts.Out, opts.Out)
		}
	}
	if len(checks) > 0 {
		renderDiags(f, cfg, checks)
		if checks.HasErrors() {
			return errReported
		}
	}
	if opts.DetailedExitcode && p.HasChanges() {
		return &ExitError{Code: 2}
	}
	return nil
}
