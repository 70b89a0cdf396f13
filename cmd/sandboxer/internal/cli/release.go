package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

// ReleaseOptions are the flags of `sandboxer release`.
type ReleaseOptions struct {
	f        *Factory
	OnDemand OnDemandOptions
	Addr     string
	Key      string
	JSON     bool
}

func newReleaseCmd(f *Factory, runF func(*ReleaseOptions) error) *cobra.Command {
	opts := &ReleaseOptions{f: f}
	cmd := &cobra.Command{
		Use:   "release ADDR",
		Short: "Tear down an on-demand sandbox instance and forget it",
		Long: "Remove sandbox.NAME[\"KEY\"] and its record. Releasing an instance that is not\n" +
			"there (never requested, already released or reaped) does nothing and exits 0.\n" +
			"With --json, prints {\"address\": …, \"released\": true|false}.",
		Example: "  sandboxer release sandbox.agent --key dev-7\n" +
			"  sandboxer release 'sandbox.agent[\"dev-7\"]' --json",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrOnDemand),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return releaseRun(cmd, opts)
		},
	}
	opts.OnDemand.bind(cmd.Flags(), sandboxer.DefaultLockTimeout)
	cmd.Flags().StringVar(&opts.Key, "key", "", "the instance `KEY` (or give the address as sandbox.NAME[\"KEY\"])")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcome as JSON")
	return cmd
}

func releaseRun(cmd *cobra.Command, opts *ReleaseOptions) error {
	f := opts.f
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	released, err := s.lib.Release(f.hard, opts.Addr, opts.Key)
	if err != nil {
		return err
	}
	addr := opts.Addr
	if a, perr := parseKeyed(opts.Addr, opts.Key); perr == nil {
		addr = a
	}
	if opts.JSON {
		return writeJSON(f.IO.Out, struct {
			Address  string `json:"address"`
			Released bool   `json:"released"`
		}{addr, released})
	}
	if released {
		fmt.Fprintf(f.IO.Out, "Released %s.\n", addr)
	} else {
		fmt.Fprintf(f.IO.Out, "%s is not provisioned; nothing to release.\n", addr)
	}
	return nil
}
