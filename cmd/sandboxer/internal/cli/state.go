package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/state"
)

// StateOptions are the flags of `sandboxer state` subcommands.
type StateOptions struct {
	f           *Factory
	Addr        string
	LockTimeout time.Duration
	JSON        bool
}

func newStateCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect and edit state",
		Long: "Inspect the state (the file .sandboxer/state.db or --state, or the PostgreSQL\n" +
			"database of --backend or SANDBOXER_BACKEND_URL) without touching the engine:\n" +
			"list the recorded instances, show one (credentials stay hidden; see sandboxer\n" +
			"env for them), or forget one without destroying it. rekey seals the secrets\n" +
			"in it under SANDBOXER_STATE_KEY; migrate copies it to another backend.",
		Example: "  sandboxer state list --json\n" +
			"  sandboxer state show sandbox.ci\n" +
			"  sandboxer state rm 'sandbox.agent[\"dev-7\"]'\n" +
			"  SANDBOXER_STATE_KEY=$(openssl rand -base64 32) sandboxer state rekey\n" +
			"  sandboxer state migrate --to \"$TEAM_PG_URL\"",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newStateListCmd(f, nil), newStateShowCmd(f, nil), newStateRmCmd(f, nil),
		newStateRekeyCmd(f, nil), newStateMigrateCmd(f, nil))
	return cmd
}

func newStateListCmd(f *Factory, runF func(*StateOptions) error) *cobra.Command {
	opts := &StateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sandbox instances in state",
		Long: "Print the address of every instance in state, one a line, sorted. With --json,\n" +
			"the same document as show --json: lineage, serial and every instance's\n" +
			"services, features and endpoints, never credentials.",
		Example: "  sandboxer state list\n" +
			"  sandboxer state list --json | jq -r '.sandboxes[] | select(.on_demand) | .address'",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return stateListRun(cmd, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the state document as JSON (no credentials)")
	return cmd
}

// stateListRun lists every address, including those whose record cannot
// be read: a user has to see one to remove it. Those make the command
// fail afterwards, with an error naming each and the way out.
func stateListRun(cmd *cobra.Command, opts *StateOptions) error {
	f := opts.f
	snap, err := f.Store().Inspect(cmd.Context())
	if err != nil {
		return err
	}
	addrs := make([]string, 0, len(snap.Records)+len(snap.Damaged))
	for _, r := range views.SortedRecords(snap) {
		a := r.Address
		if r.Owner != "" {
			a += "  # owner: " + r.Owner
		}
		addrs = append(addrs, a)
	}
	if opts.JSON {
		// The readable records as the state document; damaged ones are
		// named by the error that follows.
		if err := views.StateJSON(f.IO.Out, snap, Version); err != nil {
			return err
		}
		return snap.DamagedError()
	}
	for a := range snap.Damaged {
		addrs = append(addrs, a)
	}
	if len(snap.Damaged) > 0 {
		slices.Sort(addrs)
	}
	for _, a := range addrs {
		fmt.Fprintln(f.IO.Out, a)
	}
	return snap.DamagedError()
}

func newStateShowCmd(f *Factory, runF func(*StateOptions) error) *cobra.Command {
	opts := &StateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "show ADDR",
		Short: "Show one sandbox instance (credentials stay hidden)",
		Long: "Show what state records of one instance: services, features, the extensions\n" +
			"the engine offers, containers, endpoints, times and generation. Passwords and\n" +
			"URLs are never shown here (sandboxer env prints them).",
		Example: "  sandboxer state show sandbox.ci\n" +
			"  sandboxer state show 'sandbox.matrix[\"pg16\"]' --json",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrStateAll),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			rec, err := recordAt(cmd.Context(), f, opts.Addr, "is not in state (see sandboxer state list)")
			if err != nil {
				return err
			}
			if opts.JSON {
				return writeJSON(f.IO.Out, views.NewJSONInstance(rec))
			}
			views.RecordText(f.IO.Out, rec)
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the instance as JSON (no credentials)")
	return cmd
}

func newStateRmCmd(f *Factory, runF func(*StateOptions) error) *cobra.Command {
	opts := &StateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "rm ADDR",
		Short: "Forget a sandbox instance without destroying it",
		Long: "Remove one instance's record from state and leave its containers running. They\n" +
			"keep their labels, so sandboxer reap (or a new sandbox at the address) removes\n" +
			"them later. Takes the state lock like plan and apply.",
		Example: "  sandboxer state rm sandbox.ci\n" +
			"  sandboxer state rm 'sandbox.agent[\"dev-7\"]' --json",
		Args:              rangeArgs(1, 1),
		ValidArgsFunction: completeAddresses(f, addrStateAll),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return stateRmRun(cmd, opts)
		},
	}
	cmd.Flags().DurationVar(&opts.LockTimeout, "lock-timeout", 0, "wait this long for the state lock")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print {"removed": ADDR} as JSON`)
	return cmd
}

// recordAt reads the state record of a user-given address; a missing one
// is an error ending in notFound.
func recordAt(ctx context.Context, f *Factory, addr, notFound string) (*state.Record, error) {
	a, err := config.ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	rec, err := f.Store().Get(ctx, a.String())
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("%s %s", a, notFound)
	}
	return rec, nil
}

func stateRmRun(cmd *cobra.Command, opts *StateOptions) error {
	f := opts.f
	addr, err := config.ParseAddress(opts.Addr)
	if err != nil {
		return err
	}
	store := f.Store()
	unlock, err := store.Lock(cmd.Context(), "state rm", opts.LockTimeout)
	if err != nil {
		return lockError(err)
	}
	defer unlock()
	rec, err := store.Get(cmd.Context(), addr.String())
	// A record that cannot be read is removed all the same: that is the
	// way out the error of every other command points to.
	damaged := isDamagedRecord(err, addr.String())
	switch {
	case err != nil && !damaged:
		return err
	case rec == nil && !damaged:
		return fmt.Errorf("%s is not in state (see sandboxer state list)", addr)
	}
	if err := store.Delete(cmd.Context(), addr.String()); err != nil {
		return err
	}
	if opts.JSON {
		doc := map[string]any{"removed": addr.String()}
		if damaged {
			doc["backup"] = backupWhere(store)
		}
		return writeJSON(f.IO.Out, doc)
	}
	what := ""
	if damaged {
		what = fmt.Sprintf(" (its record could not be read; the file as it was is in %s)", backupWhere(store))
	}
	fmt.Fprintf(f.IO.Out, "Removed %s from state%s. Its containers were left running as orphans: sandboxer reap, or a new sandbox at this address, removes them.\n", addr, what)
	return nil
}

// isDamagedRecord reports whether err says that the record at addr, and
// not the state file, cannot be read.
func isDamagedRecord(err error, addr string) bool {
	var ce *state.CorruptError
	var fe *state.FutureSchemaError
	return errors.As(err, &ce) && ce.Address == addr || errors.As(err, &fe) && fe.Address == addr
}
