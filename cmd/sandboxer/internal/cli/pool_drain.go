package cli

import (
	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

func newPoolDrainCmd(f *Factory, runF func(*PoolOptions) error) *cobra.Command {
	opts := &PoolOptions{f: f}
	cmd := &cobra.Command{
		Use:   "drain ADDR",
		Short: "Tear down every unclaimed pool member and forget it",
		Long: "Remove the pool's members (claimed instances are the claimants' and stay).\n" +
			"A running serve fills the pool again; stop it first to keep it empty.",
		Example:           "  sandboxer pool drain sandbox.agent",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrOnDemand),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return poolDrainRun(opts)
		},
	}
	opts.bind(cmd)
	return cmd
}

func poolDrainRun(opts *PoolOptions) error {
	return poolRun(opts, func(s *sandboxer.Sandboxer, addr string) (*sandboxer.PoolStatus, error) {
		return s.DrainPool(opts.f.hard, addr)
	})
}
