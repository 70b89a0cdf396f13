package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newVersionCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the sandboxer version",
		Long: "Print the version of this sandboxer binary (also --version). With --json, one\n" +
			"object with the same key JSON plans carry.",
		Example: "  sandboxer version\n" +
			"  sandboxer version --json | jq -r .sandboxer_version",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return writeJSON(f.IO.Out, map[string]string{"sandboxer_version": Version})
			}
			_, err := fmt.Fprintf(f.IO.Out, "sandboxer v%s\n", Version)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}
