package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/views"
)

// StateOptions are the flags of `sandboxer state` subcommands.
type StateOptions struct {
	f           *Factory
	Addr        string
	LockTimeout time.Duration
}

func newStateCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect and edit state",
		Args:  rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newStateListCmd(f, nil), newStateShowCmd(f, nil), newStateRmCmd(f, nil))
	return cmd
}

func newStateListCmd(f *Factory, runF func(*StateOptions) error) *cobra.Command {
	opts := &StateOptions{f: f}
	return &cobra.Command{
		Use:   "list",
		Short: "List sandbox instances in state",
		Args:  rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return stateListRun(cmd, opts)
		},
	}
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
		addrs = append(addrs, r.Address)
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
	return &cobra.Command{
		Use:               "show ADDR",
		Short:             "Show one sandbox instance (credentials stay hidden)",
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
			views.RecordText(f.IO.Out, rec)
			return nil
		},
	}
}

func newStateRmCmd(f *Factory, runF func(*StateOptions) error) *cobra.Command {
	opts := &StateOptions{f: f}
	cmd := &cobra.Command{
		Use:               "rm ADDR",
		Short:             "Forget a sandbox instance without destroying it",
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
	what := ""
	if damaged {
		what = fmt.Sprintf(" (its record could not be read; the file as it was is in %s)", state.BackupPath(store.Path()))
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
