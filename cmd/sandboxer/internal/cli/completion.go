package cli

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/config"
)

// addrKind says which sandbox addresses a command's argument may be.
type addrKind int

const (
	// addrStateAll: every address with a state record, and every declared
	// instance (env, state show, state rm, --target).
	addrStateAll addrKind = iota
	// addrOnDemand: on-demand blocks and their recorded instances
	// (request, release, extend).
	addrOnDemand
)

// completionTimeout bounds the state read of a completion: a shell waits
// on it, and a lock held by apply must not hang the prompt (bbolt's read
// lock is shared, so it rarely waits at all).
const completionTimeout = 2 * time.Second

// completeAddresses completes the first argument with sandbox addresses
// from the configuration and the state. It never prints diagnostics:
// a configuration that does not load just offers what the state holds.
func completeAddresses(f *Factory, kind addrKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return addressCandidates(cmd.Context(), f, kind, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func addressCandidates(ctx context.Context, f *Factory, kind addrKind, prefix string) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	seen := map[string]bool{}
	cfg, diags := config.Load(f.Dir(), config.Input{Environ: f.Environ}, f.Catalog)
	if !diags.HasErrors() {
		for name, sb := range cfg.Sandboxes {
			if sb.OnDemand {
				seen["sandbox."+name] = true
			}
		}
		if kind == addrStateAll {
			for _, in := range cfg.Instances {
				if !in.OnDemand {
					seen[in.Addr.String()] = true
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	if snap, err := f.Store().Snapshot(ctx); err == nil {
		for addr, rec := range snap.Records {
			if kind == addrOnDemand && !rec.OnDemand {
				continue
			}
			seen[addr] = true
		}
	}
	var out []string
	for addr := range seen {
		if strings.HasPrefix(addr, prefix) {
			out = append(out, addr)
		}
	}
	sort.Strings(out)
	return out
}

// completeAddressFlags adds address completion to every --target and
// --replace flag in the tree.
func completeAddressFlags(f *Factory, cmd *cobra.Command) {
	for _, name := range []string{"target", "replace"} {
		if cmd.Flags().Lookup(name) != nil {
			_ = cmd.RegisterFlagCompletionFunc(name, func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				return addressCandidates(c.Context(), f, addrStateAll, toComplete), cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
	for _, sub := range cmd.Commands() {
		completeAddressFlags(f, sub)
	}
}
