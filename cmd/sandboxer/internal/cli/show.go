package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/plan"
)

// ShowOptions are the flags of `sandboxer show`.
type ShowOptions struct {
	f        *Factory
	PlanFile string
	JSON     bool
	Format   string
}

func newShowCmd(f *Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{f: f}
	cmd := &cobra.Command{
		Use:   "show [PLANFILE]",
		Short: "Show the state, or a saved plan",
		Long: "Without PLANFILE: the state, one entry per sandbox (credentials hidden).\n" +
			"With PLANFILE: the saved plan as plan printed it. --json prints the state\n" +
			"document or the JSON plan; --format markdown renders a plan for a pull-request\n" +
			"comment.",
		Example: "  sandboxer show\n" +
			"  sandboxer show --json\n" +
			"  sandboxer show ci.plan --format markdown",
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.PlanFile = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return showRun(cmd, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output format: text, json or markdown")
	return cmd
}

func showRun(cmd *cobra.Command, opts *ShowOptions) error {
	f := opts.f
	format := opts.Format
	if opts.JSON {
		format = "json"
	}
	switch format {
	case "text", "json", "markdown":
	default:
		return fmt.Errorf("--format %q: must be text, json or markdown", opts.Format)
	}
	if opts.PlanFile != "" {
		file, err := readPlanFile(f, opts.PlanFile)
		if err != nil {
			return err
		}
		p := file.Plan()
		switch format {
		case "json":
			return views.PlanJSON(f.IO.Out, p, Version)
		case "markdown":
			views.PlanMarkdown(f.IO.Out, p)
		default:
			views.PlanText(f.IO.Out, p, f.Color())
		}
		return nil
	}
	if format == "markdown" {
		return fmt.Errorf("--format markdown renders a saved plan: sandboxer show --format markdown PLANFILE")
	}
	store := f.Store()
	snap, err := store.Snapshot(cmd.Context())
	if err != nil {
		return err
	}
	if format == "json" {
		return views.StateJSON(f.IO.Out, snap, Version)
	}
	fmt.Fprintf(f.IO.Out, "# %s (chosen by %s)\n\n", store.Describe(), f.backendSource())
	views.StateText(f.IO.Out, snap)
	return nil
}

// readPlanFile loads a saved plan; relative paths are taken from the
// configuration directory, as --chdir promises.
func readPlanFile(f *Factory, path string) (*plan.File, error) {
	path = f.Path(path)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	file, err := plan.DecodeFile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return file, nil
}
