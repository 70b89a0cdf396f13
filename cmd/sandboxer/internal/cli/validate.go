package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
)

// ValidateOptions are the flags of `sandboxer validate`.
type ValidateOptions struct {
	f    *Factory
	JSON bool
	Vars VarOptions
	// NoTests skips the *.sbtest.hcl files (terraform validate -no-tests).
	NoTests bool
}

func newValidateCmd(f *Factory, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration without touching state or Docker",
		Long: "Parse and check the configuration: syntax, references, types, the allowlist,\n" +
			"opt-ins, profiles, database names and env prefixes, and the *.sbtest.hcl test\n" +
			"files of sandboxer test (--no-tests skips them). It reads no state and\n" +
			"talks to no engine, so it runs anywhere. Errors carry file:line:col; --json\n" +
			"prints them as one object.",
		Example: "  sandboxer validate\n" +
			"  sandboxer validate --json --var ttl=2h",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return validateRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVar(&opts.NoTests, "no-tests", false, "do not check the *.sbtest.hcl test files")
	opts.Vars.bind(cmd.Flags())
	return cmd
}

// validateRun loads the configuration until ctx is done: a signal stops
// the evaluation of a pathological configuration at once, exit 1.
func validateRun(ctx context.Context, opts *ValidateOptions) error {
	f := opts.f
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, diags, err := loadInterruptible(ctx, f, opts.Vars.input(f))
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	if !opts.NoTests {
		// The test files too, as terraform validate checks *.tftest.hcl:
		// each decodes, and names only what the configuration has.
		files, tdiags := config.LoadTestFiles(f.Dir(), nil)
		for _, tf := range files {
			cfg.Files[tf.Name] = tf.File
			for _, r := range tf.Runs {
				if !diags.HasErrors() {
					tdiags = append(tdiags, cfg.CheckTestRun(r)...)
				}
			}
		}
		diags = append(diags, tdiags...)
	}
	if opts.JSON {
		if err := views.DiagnosticsJSON(f.IO.Out, diags); err != nil {
			return err
		}
		if diags.HasErrors() {
			return errReported
		}
		return nil
	}
	if len(diags) > 0 {
		renderDiags(f, cfg, diags)
	}
	if diags.HasErrors() {
		return errReported
	}
	fmt.Fprintf(f.IO.Out, "Success! The configuration is valid (%d %s, %d %s).\n",
		len(cfg.Projects), plural(len(cfg.Projects), "project", "projects"),
		len(cfg.Instances), plural(len(cfg.Instances), "sandbox", "sandboxes"))
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
