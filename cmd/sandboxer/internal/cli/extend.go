package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
)

// ExtendOptions are the flags of `sandboxer extend`.
type ExtendOptions struct {
	f        *Factory
	OnDemand OnDemandOptions
	Addr     string
	Key      string
	TTL      string
	JSON     bool
}

func newExtendCmd(f *Factory, runF func(*ExtendOptions) error) *cobra.Command {
	opts := &ExtendOptions{f: f}
	cmd := &cobra.Command{
		Use:   "extend ADDR --ttl D",
		Short: "Keep an on-demand sandbox instance longer: it expires D from now",
		Long: "Set the expiry of an on-demand instance to D from now (positive, at most 30d).\n" +
			"An instance that is not provisioned, or already expired, is an error: request\n" +
			"it again instead. With --json, prints the instance (no credentials).",
		Example: "  sandboxer extend sandbox.agent --key dev-7 --ttl 4h\n" +
			"  sandboxer extend 'sandbox.agent[\"dev-7\"]' --ttl 30m --json",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrOnDemand),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return extendRun(cmd, opts)
		},
	}
	opts.OnDemand.bind(cmd.Flags(), sandboxer.DefaultLockTimeout)
	cmd.Flags().StringVar(&opts.Key, "key", "", "the instance `KEY` (or give the address as sandbox.NAME[\"KEY\"])")
	cmd.Flags().StringVar(&opts.TTL, "ttl", "", "new lifetime from now (e.g. 30m, 4h; at most 30d)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the instance (no credentials) as JSON")
	return cmd
}

func extendRun(cmd *cobra.Command, opts *ExtendOptions) error {
	f := opts.f
	if opts.TTL == "" {
		return &ExitError{Code: 1, Err: usageError(cmd, fmt.Errorf("--ttl is required"))}
	}
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	in, err := s.lib.Extend(f.hard, opts.Addr, opts.Key, opts.TTL)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	var expiresAt time.Time
	if in.ExpiresAt != nil {
		expiresAt = *in.ExpiresAt
	}
	fmt.Fprintf(f.IO.Out, "%s now %s.\n", in.Address, untilText(expiresAt, f.Now()))
	return nil
}

// parseKeyed renders address+key the way state names the instance.
func parseKeyed(address, key string) (string, error) {
	a, err := config.ParseAddress(address)
	if err != nil {
		return "", err
	}
	if !a.HasKey && key != "" {
		a = config.Address{Name: a.Name, Key: key, HasKey: true}
	}
	return a.String(), nil
}
