package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/state"
)

// ConnectOptions are the flags of `sandboxer connect`.
type ConnectOptions struct {
	f      *Factory
	Addr   string
	Format string
	Prefix string
	JSON   bool
	Vars   VarOptions
	// Every is how often the state is read again to follow a
	// replacement (not a flag; tests shorten it).
	Every time.Duration
}

func newConnectCmd(f *Factory, runF func(*ConnectOptions) error) *cobra.Command {
	opts := &ConnectOptions{f: f, Every: 2 * time.Second}
	cmd := &cobra.Command{
		Use:   "connect ADDR",
		Short: "Forward a Kubernetes sandbox's services to local ports while it runs",
		Long: "Print the sandbox's credentials, as env does, with each service's URL on a\n" +
			"local port of 127.0.0.1 that is forwarded over the Kubernetes API server to\n" +
			"its pod, and keep forwarding until interrupted (Ctrl-C) or the sandbox is\n" +
			"gone. Use it where pod IPs do not route (a laptop, a CI runner outside the\n" +
			"cluster). The URLs work only while connect runs; a broken forward heals\n" +
			"by itself, and a replaced sandbox is followed on the same ports (its new\n" +
			"credentials are printed again). With endpoint = \"pod-ip\", or \"auto\" where the\n" +
			"pod IP answers, or a Docker sandbox, nothing needs forwarding: connect prints\n" +
			"the credentials and exits.",
		Example: "  sandboxer connect sandbox.dev\n" +
			"  sandboxer connect 'sandbox.agent[\"dev-7\"]' --format dotenv > .env.forwarded\n" +
			"  sandboxer connect sandbox.dev --json | head -1 | jq -r .env.SANDBOXER_POSTGRES_URL",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrStateAll),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return connectRun(cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "shell", "shell, dotenv or json")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print {"address", "generation", "services", "env", "forwarded", …} as one JSON line, again after each replacement`)
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "start variable names with `PREFIX` (default: the configuration's env_prefix, else SANDBOXER_)")
	opts.Vars.bind(cmd.Flags())
	return cmd
}

func connectRun(cmd *cobra.Command, opts *ConnectOptions) error {
	f := opts.f
	if opts.JSON {
		opts.Format = "json-object"
	}
	switch opts.Format {
	case "shell", "dotenv", "json", "json-object":
	default:
		return fmt.Errorf("--format %q: must be shell, dotenv or json", opts.Format)
	}
	if opts.Prefix != "" {
		if err := config.CheckEnvPrefix(opts.Prefix); err != nil {
			return fmt.Errorf("--prefix: %w", err)
		}
	}
	addr, err := config.ParseAddress(opts.Addr)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(f, opts.Vars)
	if err != nil {
		return err
	}
	lib, err := f.library(cfg, 0, nil, true)
	if err != nil {
		return err
	}
	defer lib.Close()
	prefix := opts.Prefix
	if prefix == "" {
		prefix = configuredPrefix(f, opts.Vars, opts.Addr)
	}
	ctx := cmd.Context() // ends on the first Ctrl-C or SIGTERM
	fw, err := lib.Forward(ctx, addr.String(), prefix)
	if err != nil {
		return err
	}
	if err := printForward(f, fw, opts.Format); err != nil {
		return err
	}
	if len(fw.Forwarded) == 0 {
		fmt.Fprintf(f.IO.Err, "%s answers at its own endpoints from this host: nothing to forward.\n", addr)
		return nil
	}
	fmt.Fprintf(f.IO.Err, "Forwarding %s (%s) over the Kubernetes API server: these URLs work while this command runs; Ctrl-C ends it.\n",
		addr, strings.Join(fw.Forwarded, ", "))
	gen := fw.Generation
	tick := time.NewTicker(opts.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		next, err := lib.Forward(ctx, addr.String(), prefix)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, sandboxer.ErrNotFound):
			fmt.Fprintf(f.IO.Err, "%s is gone; the forward has ended.\n", addr)
			return nil
		case err != nil:
			fmt.Fprintf(f.IO.Err, "Warning: %v (still forwarding)\n", err)
			continue
		}
		if next.Generation != gen {
			gen = next.Generation
			fmt.Fprintf(f.IO.Err, "%s was replaced (generation %d): new credentials, forwarded to the new pod:\n", addr, gen)
			if err := printForward(f, next, opts.Format); err != nil {
				return err
			}
		}
	}
}

// printForward prints the forwarded sandbox's variables as env does, or
// (--json) the whole answer on one line.
func printForward(f *Factory, fw *sandboxer.Forward, format string) error {
	if format == "json-object" {
		return json.NewEncoder(f.IO.Out).Encode(fw)
	}
	secret := map[string]bool{}
	for _, a := range config.CredentialAttributes() {
		if a.Secret {
			secret["_"+a.EnvSuffix] = true
		}
	}
	var vars []state.EnvVar
	for _, name := range slices.Sorted(maps.Keys(fw.Env)) {
		v := state.EnvVar{Name: name, Value: fw.Env[name]}
		for suffix := range secret {
			v.Secret = v.Secret || strings.HasSuffix(name, suffix)
		}
		vars = append(vars, v)
	}
	return views.EnvVars(f.IO.Out, f.IO.Err, vars, format)
}

// podIPNote says, on stderr, that the URLs env or output print for
// Kubernetes sandboxes name pod IPs that the configuration says do not
// route from here (endpoint = "port-forward"), and where to get ones that
// do. addrs are the sandboxes printed that run on Kubernetes.
func podIPNote(f *Factory, cfg *config.Config, addrs []string) {
	if cfg == nil || cfg.Kubernetes == nil || cfg.Kubernetes.Endpoint != config.EndpointPortForward || len(addrs) == 0 {
		return
	}
	fmt.Fprintf(f.IO.Err, "Note: %s runs on Kubernetes with endpoint = \"port-forward\": these URLs name pod IPs, which do not route from here. "+
		"sandboxer connect %s prints URLs on forwarded local ports, valid while it runs.\n", strings.Join(addrs, ", "), addrs[0])
}
