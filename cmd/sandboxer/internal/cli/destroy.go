package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/internal/views"
)

// DestroyOptions are the flags of `sandboxer destroy`.
type DestroyOptions struct {
	f           *Factory
	Planning    PlanningOptions
	AutoApprove bool
}

func newDestroyCmd(f *Factory, runF func(*DestroyOptions) error) *cobra.Command {
	opts := &DestroyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Remove sandboxes and everything they created",
		Long: "Plan the removal of every sandbox in state (or only --target ones), show it,\n" +
			"ask for \"yes\" unless --auto-approve, then remove their containers and\n" +
			"networks and forget them. On-demand instances are removed too.",
		Example: "  sandboxer destroy\n" +
			"  sandboxer destroy --auto-approve --target sandbox.ci",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkParallelism(cmd, opts.Planning.Parallelism); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return destroyRun(cmd, opts)
		},
	}
	fs := cmd.Flags()
	opts.Planning.Vars.bind(fs)
	fs.StringArrayVar(&opts.Planning.Targets, "target", nil, "destroy only this sandbox `ADDR` (repeatable)")
	fs.DurationVar(&opts.Planning.LockTimeout, "lock-timeout", 0, "wait this long for the state lock (0: fail at once)")
	fs.IntVar(&opts.Planning.Parallelism, "parallelism", 4, "how many sandboxes to destroy at once")
	fs.BoolVar(&opts.AutoApprove, "auto-approve", false, "skip the interactive 'yes'")
	return cmd
}

func destroyRun(cmd *cobra.Command, opts *DestroyOptions) error {
	f := opts.f
	// Deleting tolerates instances that are already gone, so destroy does
	// not need to refresh first.
	opts.Planning.Refresh = false
	p, err := makePlan(cmd.Context(), f, opts.Planning, "destroy", true)
	if err != nil {
		return err
	}
	defer p.close()
	if !p.plan.HasChanges() {
		fmt.Fprintln(f.IO.Out, "No sandboxes to destroy: the state holds none.")
		return nil
	}
	views.PlanText(f.IO.Out, p.plan, f.Color())
	if !opts.AutoApprove {
		if err := confirm(f, "Do you really want to destroy these sandboxes?"); err != nil {
			return err
		}
	}
	prov, err := ensureProvider(cmd.Context(), f, p)
	if err != nil {
		return err
	}
	res, err := execute(f, p.store, prov, p.plan, opts.Planning.Parallelism)
	c := f.Color()
	if err != nil {
		fmt.Fprintln(f.IO.Out, c.Red(c.Bold("\nDestroy failed.")))
	} else {
		fmt.Fprintln(f.IO.Out, c.Green(c.Bold("\nDestroy complete!")))
	}
	fmt.Fprintf(f.IO.Out, "Sandboxes: %d destroyed.\n", res.Destroyed)
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	return nil
}
