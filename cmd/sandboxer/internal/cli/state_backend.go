package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/state"
)

// StateMoveOptions are the flags of `state rekey` and `state migrate`.
type StateMoveOptions struct {
	f           *Factory
	To          string
	LockTimeout time.Duration
	JSON        bool
}

func newStateRekeyCmd(f *Factory, runF func(*StateMoveOptions) error) *cobra.Command {
	opts := &StateMoveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "rekey",
		Short: "Encrypt, re-encrypt or decrypt the secrets in state",
		Long: "Rewrite every record's secrets under the current state key, in one step:\n" +
			"SANDBOXER_STATE_KEY (a 32-byte key in base64 or hex, or a passphrase of 16+\n" +
			"characters) or SANDBOXER_STATE_KEY_FILE. Records sealed with an earlier key\n" +
			"need it in SANDBOXER_STATE_OLD_KEY (or _FILE). With no current key the\n" +
			"secrets are stored in the clear again. Run it after setting a key for the\n" +
			"first time: records written before stay in the clear until then. Takes the\n" +
			"state lock like apply.",
		Example: "  SANDBOXER_STATE_KEY=$(openssl rand -base64 32) sandboxer state rekey\n" +
			"  SANDBOXER_STATE_OLD_KEY=$OLD SANDBOXER_STATE_KEY=$NEW sandboxer state rekey",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return stateRekeyRun(cmd, opts)
		},
	}
	cmd.Flags().DurationVar(&opts.LockTimeout, "lock-timeout", 0, "wait this long for the state lock")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print {"rewritten": N, "key_id": ID} as JSON`)
	return cmd
}

func stateRekeyRun(cmd *cobra.Command, opts *StateMoveOptions) error {
	f := opts.f
	keys, err := f.Keyring()
	if err != nil {
		return err
	}
	store := f.Store()
	unlock, err := store.Lock(cmd.Context(), "state rekey", opts.LockTimeout)
	if err != nil {
		return lockError(err)
	}
	defer unlock()
	n, err := store.Rekey(cmd.Context())
	if err != nil {
		return err
	}
	id := keys.CurrentKeyID()
	if opts.JSON {
		return writeJSON(f.IO.Out, map[string]any{"rewritten": n, "key_id": id})
	}
	if id == "" {
		fmt.Fprintf(f.IO.Out, "Rewrote %d record(s) of %s with their secrets in the clear (no %s is set).\n", n, store.Describe(), state.EnvStateKey)
		return nil
	}
	fmt.Fprintf(f.IO.Out, "Rewrote %d record(s) of %s: every secret is sealed with key %s.\n", n, store.Describe(), id)
	return nil
}

func newStateMigrateCmd(f *Factory, runF func(*StateMoveOptions) error) *cobra.Command {
	opts := &StateMoveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "migrate --to postgres://…|file",
		Short: "Copy the state to another backend",
		Long: "Copy every record, the lineage and the serial from the current state (the\n" +
			"state file, or the backend chosen by --backend or SANDBOXER_BACKEND_URL) to\n" +
			"--to: a postgres:// URL, or \"file\" for the state file (--state or the\n" +
			"default path). The target must be empty or hold the same lineage, not ahead\n" +
			"of the source: another state is never overwritten. The source is left as it\n" +
			"is; point later commands at the target. Both states are locked meanwhile.\n" +
			"Secrets are sealed in the target with the current SANDBOXER_STATE_KEY.",
		Example: "  SANDBOXER_BACKEND_URL= sandboxer state migrate --to \"$TEAM_PG_URL\"\n" +
			"  SANDBOXER_BACKEND_URL=$TEAM_PG_URL sandboxer state migrate --to file",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return stateMigrateRun(cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.To, "to", "", "target backend: a postgres:// `URL`, or file")
	cmd.Flags().DurationVar(&opts.LockTimeout, "lock-timeout", 0, "wait this long for each state lock")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print {"records": N, "lineage": L, "serial": S} as JSON`)
	return cmd
}

func stateMigrateRun(cmd *cobra.Command, opts *StateMoveOptions) error {
	f := opts.f
	// The source is the current backend; the state file (--state or the
	// default path) is whichever side is not a database. When the
	// configuration's backend changed since its state was last used, the
	// source is the backend last used and the target, unless --to says
	// otherwise, the one the configuration now chooses (Terraform's init
	// -migrate-state).
	// --state names the file side, whichever it is: not a conflict here.
	choice, cerr := f.choiceWith("")
	if f.Global.State != "" {
		choice.StatePath = f.Path(f.Global.State)
		if choice.URL == "" {
			choice.ByConfig, cerr = false, nil // the file named: an explicit choice
		}
	}
	var changed *sandboxer.BackendChangedError
	srcWhere, srcPath, dstPath := choice.URL, choice.StatePath, choice.StatePath
	switch {
	case errors.As(cerr, &changed):
		srcWhere, srcPath = changed.From, changed.FromPath
		if opts.To == "" {
			opts.To = choice.URL
			if opts.To == "" {
				opts.To = "file"
			}
		}
	case cerr != nil:
		return cerr
	case opts.To == "":
		return &ExitError{Code: 1, Err: errors.New("state migrate needs --to: a postgres:// URL, or file")}
	}
	srcURL, err := backendURL(srcWhere)
	if err != nil {
		return err
	}
	dstURL, err := backendURL(opts.To)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if srcURL == dstURL && (srcURL != "" || srcPath == dstPath) {
		return errors.New("state migrate: the source and --to are the same state (choose the source with --backend or " + EnvBackendURL + ")")
	}
	src, err := f.openAt(srcWhere, srcPath)
	if err != nil {
		return err
	}
	dst, err := f.openAt(opts.To, dstPath)
	if err != nil {
		return err
	}
	imp, ok := dst.(state.Importer)
	if !ok {
		return fmt.Errorf("%s cannot be migrated into", dst.Describe())
	}
	ctx := cmd.Context()
	unlockSrc, err := src.Lock(ctx, "state migrate", opts.LockTimeout)
	if err != nil {
		return lockError(err)
	}
	defer unlockSrc()
	unlockDst, err := dst.Lock(ctx, "state migrate", opts.LockTimeout)
	if err != nil {
		return lockError(err)
	}
	defer unlockDst()
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return err
	}
	if snap.Lineage == "" {
		return fmt.Errorf("%s is empty: there is nothing to migrate", src.Describe())
	}
	if err := imp.Import(ctx, snap); err != nil {
		return err
	}
	// The configuration's state is at the target now: the backend it
	// chooses, when it was the target, is recorded as the one used;
	// another target is noted, so that choosing it later is no change.
	switch dstChoice := (sandboxer.BackendChoice{URL: dstURL, StatePath: dstPath}); {
	case changed != nil && dstURL == choice.URL && dstPath == choice.StatePath:
		decl, _ := f.configBackend()
		if err := sandboxer.RecordBackend(f.Dir(), choice, decl); err != nil {
			return err
		}
	case changed != nil || choice.ByConfig:
		if err := sandboxer.RecordMigration(f.Dir(), dstChoice); err != nil {
			return err
		}
	}
	if opts.JSON {
		return writeJSON(f.IO.Out, map[string]any{"records": len(snap.Records), "lineage": snap.Lineage, "serial": snap.Serial})
	}
	fmt.Fprintf(f.IO.Out, "Copied %d record(s) (lineage %s, serial %d) from %s to %s. The source was left as it is.\n",
		len(snap.Records), snap.Lineage, snap.Serial, src.Describe(), dst.Describe())
	return nil
}
