package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/internal/views"
)

// RequestOptions are the flags of `sandboxer request`.
type RequestOptions struct {
	f            *Factory
	OnDemand     OnDemandOptions
	Addr         string
	Key          string
	Extensions   []string
	CarryData    bool
	ReadyTimeout string
	TTL          string
	Profile      string
	Prefix       string
	JSON         bool
}

func newRequestCmd(f *Factory, runF func(*RequestOptions) error) *cobra.Command {
	opts := &RequestOptions{f: f}
	cmd := &cobra.Command{
		Use:   "request ADDR",
		Short: "Provision or reuse an instance of an on-demand sandbox and print its credentials",
		Long: "Ensure sandbox.NAME[\"KEY\"] of an on_demand block exists and covers what is asked,\n" +
			"by the cache rule plan uses: a live cached instance that covers the request is\n" +
			"reused at once; a dead one is re-provisioned; one that lacks a service or feature\n" +
			"is replaced (new before old, credentials rotated). Concurrent requests for one\n" +
			"instance provision it once.\n\n" +
			"Prints shell exports (eval \"$(sandboxer request sandbox.agent --key dev-7)\"),\n" +
			"or with --json the object of SPEC §8.",
		Example: "  sandboxer request sandbox.agent --key dev-7 --extensions postgres=vector --ttl 2h --json\n" +
			"  sandboxer request sandbox.agent --key rag-1 --profile rag --prefix ROBOCO_TEST_\n" +
			"  sandboxer request 'sandbox.agent[\"dev-7\"]'",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrOnDemand),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return requestRun(cmd, opts)
		},
	}
	fs := cmd.Flags()
	opts.OnDemand.bind(fs, sandboxer.DefaultLockTimeout)
	fs.StringVar(&opts.Key, "key", "", "the instance `KEY` (or give the address as sandbox.NAME[\"KEY\"])")
	fs.BoolVar(&opts.CarryData, "carry-data", false, "if the instance must be replaced, carry its data (every service) into the new one")
	fs.StringArrayVar(&opts.Extensions, "extensions", nil, "extra features for this call, `SERVICE=F1,F2` (repeatable)")
	fs.StringVar(&opts.TTL, "ttl", "", "lifetime from now, overriding the block's ttl (e.g. 30m, 4h, 2d; at most 30d)")
	fs.StringVar(&opts.Profile, "profile", "", "ask for the `NAME`d profile of the block's project (its services and extensions)")
	fs.StringVar(&opts.Prefix, "prefix", "", "start variable names with `PREFIX` instead of the block's env_prefix or SANDBOXER_ (e.g. ROBOCO_TEST_)")
	fs.StringVar(&opts.ReadyTimeout, "ready-timeout", "", "how long a provision may wait for each service to start (`DURATION`, e.g. 5m; default: grows with the machine's load)")
	fs.BoolVar(&opts.JSON, "json", false, "print one JSON object")
	return cmd
}

func requestRun(cmd *cobra.Command, opts *RequestOptions) error {
	f := opts.f
	ext, err := parseExtensionFlags(opts.Extensions)
	if err != nil {
		return err
	}
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	sbx, err := s.lib.Request(f.hard, opts.Addr, sandboxer.RequestOptions{
		Key: opts.Key, Extensions: ext, TTL: opts.TTL,
		Profile: opts.Profile, Prefix: opts.Prefix, CarryData: opts.CarryData, ReadyTimeout: opts.ReadyTimeout})
	if err != nil {
		return unprovidable(f, err, s.cfg)
	}
	how := "provisioned"
	switch {
	case sbx.Reused:
		how = "reused"
	case sbx.FromPool:
		how = "claimed from the warm pool"
	}
	var expiresAt time.Time
	if sbx.ExpiresAt != nil {
		expiresAt = *sbx.ExpiresAt
	}
	fmt.Fprintf(f.IO.Err, "%s: %s, generation %d, %s\n", sbx.Address, how, sbx.Generation, untilText(expiresAt, f.Now()))
	if opts.JSON {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(sbx)
	}
	views.ShellExports(f.IO.Out, sbx.Env)
	return nil
}
