package cli

import (
	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

func newPoolFillCmd(f *Factory, runF func(*PoolOptions) error) *cobra.Command {
	opts := &PoolOptions{f: f}
	cmd := &cobra.Command{
		Use:   "fill ADDR",
		Short: "Provision pool members until the pool is full; returns once it is",
		Long: "Provision members of the block's warm pool (each the block's full opted set, at a\n" +
			"reserved key sandbox.NAME[\"~pool-…\"]) until it holds pool.size ready ones, and\n" +
			"return once it does: run it from cron or a CI step when serve is not running.\n" +
			"Members are provisioned a few at a time; an error is reported after those in\n" +
			"flight finish.",
		Example: "  sandboxer pool fill sandbox.agent\n" +
			"  sandboxer pool fill sandbox.agent --json",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrOnDemand),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return poolFillRun(opts)
		},
	}
	opts.bind(cmd)
	return cmd
}

func poolFillRun(opts *PoolOptions) error {
	return poolRun(opts, func(s *sandboxer.Sandboxer, addr string) (*sandboxer.PoolStatus, error) {
		return s.FillPool(opts.f.hard, addr)
	})
}
