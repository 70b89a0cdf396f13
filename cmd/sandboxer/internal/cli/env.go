package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/views"
)

// EnvOptions are the flags of `sandboxer env`.
type EnvOptions struct {
	f      *Factory
	Addr   string
	Format string
}

func newEnvCmd(f *Factory, runF func(*EnvOptions) error) *cobra.Command {
	opts := &EnvOptions{f: f}
	cmd := &cobra.Command{
		Use:   "env ADDR",
		Short: "Print a sandbox's credentials as ready-to-export variables",
		Long: "Print SANDBOXER_<SERVICE>_URL, _HOST, _PORT, _USER, _PASSWORD and (postgres) _DB.\n" +
			"Formats: shell (eval \"$(sandboxer env ADDR)\"), dotenv, json, github (>> \"$GITHUB_ENV\";\n" +
			"mask commands for the passwords go to stderr, where the runner reads them).",
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return envRun(cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "shell", "shell, dotenv, json or github")
	return cmd
}

func envRun(cmd *cobra.Command, opts *EnvOptions) error {
	f := opts.f
	switch opts.Format {
	case "shell", "dotenv", "json", "github":
	default:
		return fmt.Errorf("--format %q: must be shell, dotenv, json or github", opts.Format)
	}
	rec, err := recordAt(cmd.Context(), f, opts.Addr, "is not provisioned (see sandboxer state list; run sandboxer apply first)")
	if err != nil {
		return err
	}
	return views.Env(f.IO.Out, f.IO.Err, rec, "", opts.Format)
}
