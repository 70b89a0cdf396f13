package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// usageError names the command so a mistyped flag says where to look.
func usageError(c *cobra.Command, err error) error {
	return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
}

// rangeArgs is cobra.RangeArgs with an exit-1 usage error.
func rangeArgs(min, max int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			want := fmt.Sprintf("%d to %d", min, max)
			if min == max {
				want = fmt.Sprint(min)
			}
			return &ExitError{Code: 1, Err: usageError(c, fmt.Errorf("%s takes %s argument(s), got %d", c.CommandPath(), want, len(args)))}
		}
		return nil
	}
}

// checkParallelism rejects a --parallelism below 1 as a usage error.
func checkParallelism(c *cobra.Command, n int) error {
	if n < 1 {
		return &ExitError{Code: 1, Err: usageError(c, fmt.Errorf("--parallelism must be at least 1, got %d", n))}
	}
	return nil
}

// writeJSON prints v as indented JSON, the shape of every --json output.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
