package cli

import (
	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

func newPoolStatusCmd(f *Factory, runF func(*PoolOptions) error) *cobra.Command {
	opts := &PoolOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status ADDR",
		Short: "Show how many pool members are ready (no engine contact)",
		Long: "Print the pool's size and how many unclaimed, unexpired members it holds,\n" +
			"from state alone; with --json also the members' addresses.",
		Example: "  sandboxer pool status sandbox.agent\n" +
			"  sandboxer pool status sandbox.agent --json",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrOnDemand),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return poolStatusRun(opts)
		},
	}
	opts.bind(cmd)
	return cmd
}

func poolStatusRun(opts *PoolOptions) error {
	return poolRun(opts, func(s *sandboxer.Sandboxer, addr string) (*sandboxer.PoolStatus, error) {
		return s.PoolStatus(opts.f.hard, addr)
	})
}
