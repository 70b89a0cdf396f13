package cli

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/state"
)

// OutputOptions are the flags of `sandboxer output`.
type OutputOptions struct {
	f    *Factory
	Name string
	JSON bool
	Raw  bool
	Vars VarOptions
}

func newOutputCmd(f *Factory, runF func(*OutputOptions) error) *cobra.Command {
	opts := &OutputOptions{f: f}
	cmd := &cobra.Command{
		Use:   "output [NAME]",
		Short: "Print outputs; sensitive ones only by name, --json or --raw",
		Long: "Print the outputs the configuration declares, evaluated against state. A\n" +
			"sensitive output (one that carries a password or URL) shows as <sensitive> in\n" +
			"the listing, and its value only when asked for by name, with --raw, or with\n" +
			"--json (Terraform's output -json shape).",
		Example: "  sandboxer output\n" +
			"  sandboxer output ci_database_url --raw\n" +
			"  sandboxer output --json",
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return outputRun(cmd, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON (sensitive values included)")
	cmd.Flags().BoolVar(&opts.Raw, "raw", false, "print one output's string value with no quoting")
	opts.Vars.bind(cmd.Flags())
	return cmd
}

func outputRun(cmd *cobra.Command, opts *OutputOptions) error {
	f := opts.f
	if opts.Raw && opts.JSON {
		return fmt.Errorf("--raw and --json cannot be used together")
	}
	if opts.Raw && opts.Name == "" {
		return fmt.Errorf("--raw needs an output NAME")
	}
	cfg, err := loadConfig(f, opts.Vars)
	if err != nil {
		return err
	}
	if opts.Name != "" {
		found := false
		for _, o := range cfg.Outputs {
			found = found || o.Name == opts.Name
		}
		if !found {
			return fmt.Errorf("output %q is not declared", opts.Name)
		}
	}
	snap, err := f.Store().Snapshot(cmd.Context())
	if err != nil {
		return err
	}
	vals, diags := sandboxer.OutputValues(cfg, snap)
	var onKube []string
	for _, addr := range slices.Sorted(maps.Keys(snap.Records)) {
		if snap.Records[addr].RuntimeOf() == state.RuntimeKubernetes {
			onKube = append(onKube, addr)
		}
	}
	defer podIPNote(f, cfg, onKube)
	if opts.Name != "" {
		// Only the asked-for output has to be computable.
		diags = diags[:0:0]
		if _, ok := vals[opts.Name]; !ok {
			return fmt.Errorf("output %q has no value yet: the sandbox it refers to is not provisioned (run sandboxer apply)", opts.Name)
		}
	} else if diags.HasErrors() {
		renderDiags(f, cfg, diags)
		return errReported
	}
	switch {
	case opts.JSON:
		return views.OutputJSON(f.IO.Out, cfg.Outputs, vals, opts.Name)
	case opts.Raw:
		fmt.Fprint(f.IO.Out, views.RawValue(vals[opts.Name]))
		return nil
	case opts.Name != "":
		fmt.Fprintln(f.IO.Out, views.HCLValue(vals[opts.Name]))
		return nil
	}
	if len(cfg.Outputs) == 0 {
		fmt.Fprintln(f.IO.Out, "No outputs are declared.")
		return nil
	}
	views.Outputs(f.IO.Out, cfg.Outputs, vals)
	return nil
}
