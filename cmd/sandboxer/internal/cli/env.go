package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/state"
)

// EnvOptions are the flags of `sandboxer env`.
type EnvOptions struct {
	f      *Factory
	Addr   string
	Format string
	// Prefix starts the names; "" takes the configuration's env_prefix
	// for the instance, else SANDBOXER_.
	Prefix string
	JSON   bool
	Vars   VarOptions
}

func newEnvCmd(f *Factory, runF func(*EnvOptions) error) *cobra.Command {
	opts := &EnvOptions{f: f}
	cmd := &cobra.Command{
		Use:   "env ADDR",
		Short: "Print a sandbox's credentials as ready-to-export variables",
		Long: "Print <PREFIX><SERVICE>_URL, _HOST, _PORT, _USER, _PASSWORD and (postgres) _DB.\n" +
			"PREFIX is --prefix, else the env_prefix the sandbox or its project sets in the\n" +
			"configuration, else SANDBOXER_.\n" +
			"Formats: shell (eval \"$(sandboxer env ADDR)\"), dotenv, json, github (>> \"$GITHUB_ENV\";\n" +
			"mask commands for the passwords go to stderr, where the runner reads them).",
		Example: "  eval \"$(sandboxer env sandbox.ci)\"\n" +
			"  sandboxer env sandbox.ci --prefix ROBOCO_TEST_ --format dotenv > .env.test\n" +
			"  sandboxer env 'sandbox.matrix[\"pg16\"]' --format github >> \"$GITHUB_ENV\"",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrStateAll),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return envRun(cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "shell", "shell, dotenv, json or github")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "the same as --format json")
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "start variable names with `PREFIX` (default: the configuration's env_prefix, else SANDBOXER_)")
	opts.Vars.bind(cmd.Flags())
	return cmd
}

func envRun(cmd *cobra.Command, opts *EnvOptions) error {
	f := opts.f
	if opts.JSON {
		if cmd.Flags().Changed("format") && opts.Format != "json" {
			return fmt.Errorf("--json and --format %s disagree: give one", opts.Format)
		}
		opts.Format = "json"
	}
	switch opts.Format {
	case "shell", "dotenv", "json", "github":
	default:
		return fmt.Errorf("--format %q: must be shell, dotenv, json or github", opts.Format)
	}
	if opts.Prefix != "" {
		if err := config.CheckEnvPrefix(opts.Prefix); err != nil {
			return fmt.Errorf("--prefix: %w", err)
		}
	}
	rec, err := recordAt(cmd.Context(), f, opts.Addr, "is not provisioned (see sandboxer state list; run sandboxer apply first)")
	if err != nil {
		return err
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = configuredPrefix(f, opts.Vars, opts.Addr)
	}
	if err := views.Env(f.IO.Out, f.IO.Err, rec, prefix, opts.Format); err != nil {
		return err
	}
	if rec.RuntimeOf() == state.RuntimeKubernetes {
		if cfg, diags := config.Load(f.Dir(), opts.Vars.input(f), f.Catalog); !diags.HasErrors() {
			podIPNote(f, cfg, []string{rec.Address})
		}
	}
	return nil
}

// configuredPrefix is the env_prefix the configuration gives the instance
// at addr (a keyed on-demand instance takes its block's), or "". env works
// from state alone, so a configuration that does not load is not an error
// here: the names fall back to SANDBOXER_, with a warning on stderr.
func configuredPrefix(f *Factory, vars VarOptions, addr string) string {
	a, err := config.ParseAddress(addr)
	if err != nil {
		return ""
	}
	cfg, diags := config.Load(f.Dir(), vars.input(f), f.Catalog)
	if diags.HasErrors() {
		if len(cfg.Sources) == 0 {
			return "" // state without a configuration: nothing to warn about
		}
		fmt.Fprintf(f.IO.Err, "Warning: the configuration does not load (run sandboxer validate), so its env_prefix is not known; using SANDBOXER_ names.\n")
		return ""
	}
	if in, ok := cfg.Instance(a); ok {
		return in.EnvPrefix
	}
	if in, ok := cfg.Instance(a.Block()); ok && in.OnDemand {
		return in.EnvPrefix
	}
	return ""
}
