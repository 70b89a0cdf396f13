package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/plan"
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
	cfg, err := loadConfig(f, opts.Planning.Vars)
	if err != nil {
		return err
	}
	lib, err := f.library(cfg, opts.Planning.LockTimeout, nil)
	if err != nil {
		return err
	}
	defer lib.Close()
	confirmed := false
	p, res, err := lib.Destroy(f.hard, opts.Planning.planOptions(true), sandboxer.ApplyOptions{
		Parallelism: opts.Planning.Parallelism,
		Confirm: func(p *plan.Plan) error {
			confirmed = true
			if !p.HasChanges() {
				fmt.Fprintln(f.IO.Out, "No sandboxes to destroy: the state holds none.")
				return nil
			}
			views.PlanText(f.IO.Out, p, f.Color())
			if opts.AutoApprove {
				return nil
			}
			return confirm(f, "Do you really want to destroy these sandboxes?")
		},
	})
	switch {
	case !confirmed:
		return planFailed(f, cfg, "destroy", err)
	case errors.Is(err, errCancelled):
		return err
	case !p.HasChanges():
		return nil
	}
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
