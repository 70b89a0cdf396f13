package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/snapshot"
)

// DataOptions are the flags of `snapshot`, `restore` and `reset`.
type DataOptions struct {
	f        *Factory
	OnDemand OnDemandOptions
	Addr     string
	Name     string
	JSON     bool
}

func newSnapshotCmd(f *Factory, runF func(*DataOptions) error) *cobra.Command {
	opts := &DataOptions{f: f}
	cmd := &cobra.Command{
		Use:   "snapshot ADDR --name NAME",
		Short: "Save a sandbox's data (every service) as a named snapshot",
		Long: "Save the data of every service of a provisioned sandbox under .sandboxer/snapshots/NAME\n" +
			"(next to the state file): PostgreSQL as pg_dump's custom format, Redis as its keys in\n" +
			"DUMP (RDB) encoding, with a manifest of services, features, sizes and sha256 checksums.\n" +
			"No credentials are stored. The snapshot is also prepared inside the sandbox, so that\n" +
			"`sandboxer reset` returns to it in a fraction of a second.\n\n" +
			"  sandboxer snapshot list       the snapshots there are\n" +
			"  sandboxer snapshot rm NAME    delete one",
		Example: "  sandboxer snapshot sandbox.dev --name seeded\n" +
			"  sandboxer snapshot 'sandbox.agent[\"dev-7\"]' --name before-migration --json",
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return dataRun(opts, "snapshot")
		},
	}
	opts.bind(cmd)
	cmd.Flags().StringVar(&opts.Name, "name", "", "the snapshot's `NAME` (1-63 of A-Z a-z 0-9 _ . -)")
	_ = cmd.MarkFlagRequired("name")
	cmd.AddCommand(newSnapshotListCmd(f), newSnapshotRmCmd(f))
	return cmd
}

func newRestoreCmd(f *Factory, runF func(*DataOptions) error) *cobra.Command {
	opts := &DataOptions{f: f}
	cmd := &cobra.Command{
		Use:   "restore ADDR --snapshot NAME",
		Short: "Replace a sandbox's data with a snapshot's",
		Long: "Load a snapshot into a provisioned sandbox, replacing its data; objects end up owned by\n" +
			"the sandbox's own handed-out role. Refused, with nothing changed, when the snapshot's\n" +
			"source had a service or feature this sandbox lacks, or a snapshot file fails its checksum.",
		Example: "  sandboxer restore sandbox.dev --snapshot seeded\n" +
			"  sandboxer restore 'sandbox.agent[\"dev-7\"]' --snapshot seeded --json",
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return dataRun(opts, "restore")
		},
	}
	opts.bind(cmd)
	cmd.Flags().StringVar(&opts.Name, "snapshot", "", "the snapshot `NAME` to load")
	_ = cmd.MarkFlagRequired("snapshot")
	return cmd
}

func newResetCmd(f *Factory, runF func(*DataOptions) error) *cobra.Command {
	opts := &DataOptions{f: f}
	cmd := &cobra.Command{
		Use:   "reset ADDR [--snapshot NAME]",
		Short: "Return a sandbox to a snapshot, fast (for test isolation)",
		Long: "Return a sandbox's data to a snapshot: NAME, or the newest snapshot taken of ADDR.\n" +
			"A snapshot taken of (or restored into) this sandbox before is kept inside it, so a reset\n" +
			"is a database clone and a key reload, not a full restore.",
		Example: "  sandboxer reset sandbox.dev\n" +
			"  sandboxer reset sandbox.dev --snapshot seeded --json",
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return dataRun(opts, "reset")
		},
	}
	opts.bind(cmd)
	cmd.Flags().StringVar(&opts.Name, "snapshot", "", "the snapshot `NAME` (default: the newest of ADDR)")
	return cmd
}

func (o *DataOptions) bind(cmd *cobra.Command) {
	o.OnDemand.bind(cmd.Flags(), sandboxer.DefaultLockTimeout)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the outcome as JSON")
}

func dataRun(opts *DataOptions, op string) error {
	f := opts.f
	addr, err := config.ParseAddress(opts.Addr)
	if err != nil {
		return err
	}
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	var out *sandboxer.DataResult
	switch op {
	case "snapshot":
		out, err = s.lib.Snapshot(f.hard, addr.String(), opts.Name)
	case "restore":
		out, err = s.lib.Restore(f.hard, addr.String(), opts.Name)
	default:
		out, err = s.lib.Reset(f.hard, addr.String(), opts.Name)
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		return json.NewEncoder(f.IO.Out).Encode(out)
	}
	svcs := strings.Join(out.Services, ", ")
	switch op {
	case "snapshot":
		fmt.Fprintf(f.IO.Out, "Saved snapshot %q of %s (%s; %s).\n", out.Snapshot, out.Address, svcs, byteSize(out.Size))
	case "restore":
		fmt.Fprintf(f.IO.Out, "Restored %s from snapshot %q (%s).\n", out.Address, out.Snapshot, svcs)
	default:
		fmt.Fprintf(f.IO.Out, "Reset %s to snapshot %q (%s).\n", out.Address, out.Snapshot, svcs)
	}
	return nil
}

func newSnapshotListCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List snapshots",
		Long:  "List the snapshots in the snapshot store next to the state file: name, the\nsandbox they were taken from, its services and features, size and time.",
		Example: "  sandboxer snapshot list\n" +
			"  sandboxer snapshot list --json",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := sandboxer.SnapshotStore(f.StatePath()).List()
			if err != nil {
				return err
			}
			if asJSON {
				if all == nil {
					all = []*snapshot.Manifest{}
				}
				return json.NewEncoder(f.IO.Out).Encode(all)
			}
			if len(all) == 0 {
				fmt.Fprintln(f.IO.Out, "No snapshots.")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tGENERATION\tSERVICES\tSIZE\tCREATED")
			for _, m := range all {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", m.Name, m.Source.Address, m.Source.Generation,
					featuresText(m), byteSize(m.Size()), m.CreatedAt.Format("2006-01-02T15:04:05Z"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the manifests as JSON")
	return cmd
}

func newSnapshotRmCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rm NAME",
		Short: "Delete a snapshot",
		Long:  "Delete the named snapshot (its manifest and data) from the snapshot store\nnext to the state file. Sandboxes restored from it are not affected.",
		Example: "  sandboxer snapshot rm seeded\n" +
			"  sandboxer snapshot rm seeded --json",
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sandboxer.SnapshotStore(f.StatePath()).Remove(args[0]); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f.IO.Out, map[string]string{"removed": args[0]})
			}
			fmt.Fprintf(f.IO.Out, "Removed snapshot %q.\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	return cmd
}

// featuresText renders services with their features: postgres[vector],redis.
func featuresText(m *snapshot.Manifest) string {
	parts := make([]string, 0, len(m.Services))
	for _, svc := range m.Services {
		if fs := m.Features[svc]; len(fs) > 0 {
			parts = append(parts, svc+"["+strings.Join(fs, ",")+"]")
		} else {
			parts = append(parts, svc)
		}
	}
	return strings.Join(parts, ",")
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
