package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the sandboxer version",
		Args:  rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "sandboxer v%s\n", Version)
			return err
		},
	}
}
