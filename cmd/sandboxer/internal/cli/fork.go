package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

// ForkOptions are the flags of `sandboxer fork`.
type ForkOptions struct {
	f        *Factory
	OnDemand OnDemandOptions
	Addr     string
	Key      string
	Count    int
	ToKey    string
	TTL      string
	Prefix   string
	JSON     bool
}

func newForkCmd(f *Factory, runF func(*ForkOptions) error) *cobra.Command {
	opts := &ForkOptions{f: f}
	cmd := &cobra.Command{
		Use:   "fork ADDR --count N",
		Short: "Copy a running on-demand sandbox, data and all, into N new instances",
		Long: "Make N new instances of the block of sandbox.NAME[\"KEY\"] whose data (every\n" +
			"service's) is the source's at one instant: everything committed before the fork\n" +
			"began is in every copy, nothing after. The copies are PREFIX-1 … PREFIX-N\n" +
			"(--to-key PREFIX, default KEY-fork), each with its own credentials, ttl and key;\n" +
			"afterwards they are ordinary instances (release, extend, snapshot, request).\n" +
			"The source keeps serving: its writers wait only while its data is captured.\n\n" +
			"Prints the copies' addresses (credentials: sandboxer env ADDR), or with --json\n" +
			"one object with every copy's credentials, how the data was copied and how long\n" +
			"the source was held.",
		Example: "  sandboxer fork sandbox.agent --key base --count 10 --to-key try\n" +
			"  sandboxer fork 'sandbox.agent[\"base\"]' --count 3 --ttl 1h --json",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrOnDemand),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return forkRun(cmd, opts)
		},
	}
	fs := cmd.Flags()
	opts.OnDemand.bind(fs, sandboxer.DefaultLockTimeout)
	fs.StringVar(&opts.Key, "key", "", "the source's `KEY` (or give the address as sandbox.NAME[\"KEY\"])")
	fs.IntVar(&opts.Count, "count", 0, fmt.Sprintf("how many copies (`N`, 1 to %d)", sandboxer.MaxForkCount))
	fs.StringVar(&opts.ToKey, "to-key", "", "the copies' key `PREFIX`: they are PREFIX-1 … PREFIX-N (default: the source's key + \"-fork\")")
	fs.StringVar(&opts.TTL, "ttl", "", "the copies' lifetime from now, overriding the block's ttl (e.g. 30m, 4h; at most 30d)")
	fs.StringVar(&opts.Prefix, "prefix", "", "start the variable names in --json's env with `PREFIX` instead of the block's env_prefix or SANDBOXER_")
	fs.BoolVar(&opts.JSON, "json", false, "print one JSON object")
	return cmd
}

func forkRun(cmd *cobra.Command, opts *ForkOptions) error {
	f := opts.f
	if !cmd.Flags().Changed("count") {
		return &ExitError{Code: 1, Err: usageError(cmd, fmt.Errorf("--count is required (1 to %d)", sandboxer.MaxForkCount))}
	}
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	res, err := s.lib.Fork(f.hard, opts.Addr, sandboxer.ForkOptions{Key: opts.Key, Count: opts.Count,
		ToKey: opts.ToKey, TTL: opts.TTL, Prefix: opts.Prefix})
	if err != nil {
		return err
	}
	var how []string
	for _, svc := range slices.Sorted(maps.Keys(res.Methods)) {
		how = append(how, svc+": "+res.Methods[svc])
	}
	fmt.Fprintf(f.IO.Err, "%s: forked into %d in %s (%s; %s; writers held %d ms)\n", res.Source, len(res.Sandboxes),
		(time.Duration(res.ElapsedMS) * time.Millisecond).String(), strings.Join(how, ", "), sizeText(res.Bytes), res.HeldMS)
	if opts.JSON {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	for _, sbx := range res.Sandboxes {
		fmt.Fprintln(f.IO.Out, sbx.Address)
	}
	return nil
}

// sizeText is n bytes for people.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1023)/1024)
}
