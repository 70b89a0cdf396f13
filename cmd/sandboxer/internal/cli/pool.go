package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

// PoolOptions are the flags the pool subcommands share.
type PoolOptions struct {
	f        *Factory
	OnDemand OnDemandOptions
	Addr     string
	JSON     bool
}

func (o *PoolOptions) bind(cmd *cobra.Command) {
	o.OnDemand.bind(cmd.Flags(), sandboxer.DefaultLockTimeout)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the pool's status as JSON")
}

// newPoolCmd groups fill, status and drain: the warm pool without serve
// (for cron and CI), which keeps pools full by itself.
func newPoolCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pool",
		Short: "Fill, inspect or drain the warm pool of an on-demand sandbox block",
		Long: "A sandbox block with pool { size = N } keeps N ready instances that `request`\n" +
			"claims in milliseconds, with fresh credentials. `serve` keeps pools full by\n" +
			"itself; without it, run `sandboxer pool fill` (from cron or a CI step).",
		Example: "  sandboxer pool fill sandbox.agent\n" +
			"  sandboxer pool status sandbox.agent --json\n" +
			"  sandboxer pool drain sandbox.agent",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPoolFillCmd(f, nil), newPoolStatusCmd(f, nil), newPoolDrainCmd(f, nil))
	return cmd
}

// poolRun opens the library, runs one pool call and prints its status.
func poolRun(opts *PoolOptions, call func(s *sandboxer.Sandboxer, addr string) (*sandboxer.PoolStatus, error)) error {
	f := opts.f
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	st, err := call(s.lib, opts.Addr)
	if st == nil {
		return err
	}
	if opts.JSON {
		if werr := writeJSON(f.IO.Out, st); werr != nil {
			return werr
		}
		return err
	}
	writePoolStatus(f.IO.Out, st)
	return err
}

func writePoolStatus(w io.Writer, st *sandboxer.PoolStatus) {
	var did []string
	if st.Filled > 0 {
		did = append(did, fmt.Sprintf("%d filled", st.Filled))
	}
	if st.Drained > 0 {
		did = append(did, fmt.Sprintf("%d drained", st.Drained))
	}
	extra := ""
	if len(did) > 0 {
		extra = " (" + strings.Join(did, ", ") + ")"
	}
	fmt.Fprintf(w, "Pool of %s: %d/%d ready%s.\n", st.Address, st.Ready, st.Size, extra)
}
