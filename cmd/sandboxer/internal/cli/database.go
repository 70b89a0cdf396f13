package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/internal/views"
)

// DatabaseOptions are the flags of `sandboxer database create|drop`.
type DatabaseOptions struct {
	f        *Factory
	OnDemand OnDemandOptions
	Addr     string
	Name     string
	SQL      []string
	CreateDB bool
	TTL      time.Duration
	Prefix   string
	JSON     bool
}

func newDatabaseCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "database",
		Short: "Hand out, or drop, a fresh PostgreSQL or MySQL database of its own (one per test)",
		Long: "A database per test, as sandboxertest.Database gives a Go test: made from a\n" +
			"template made once per migration content inside the block's kept host\n" +
			"instance (sandbox.NAME[\"sbx-databases\"]), owned by a user of its own that no\n" +
			"other database's user can reach: a PostgreSQL clone, or on a mysql block a\n" +
			"copy of the template's tables and rows. A database made here lives until it\n" +
			"is dropped or its --ttl passes (then reap drops it).",
		Example: "  sandboxer database create sandbox.db --sql db/schema.sql --json\n" +
			"  sandboxer database drop sandbox.db sbxt_0123456789abcdef",
		Args: rangeArgs(0, 0),
	}
	cmd.AddCommand(newDatabaseCreateCmd(f, nil), newDatabaseDropCmd(f, nil))
	return cmd
}

func newDatabaseCreateCmd(f *Factory, runF func(*DatabaseOptions) error) *cobra.Command {
	opts := &DatabaseOptions{f: f}
	cmd := &cobra.Command{
		Use:   "create ADDR",
		Short: "Hand out a fresh database and print its credentials",
		Long: "Clone a fresh database for sandbox.NAME's host from the template the --sql\n" +
			"files make (run in order, once per content), and print its credentials as\n" +
			"shell exports, or the request object with --json.",
		Example: "  eval \"$(sandboxer database create sandbox.db --sql db/schema.sql)\"\n" +
			"  sandboxer database create sandbox.db --ttl 30m --json",
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr = args[0]
			if runF != nil {
				return runF(opts)
			}
			return databaseCreateRun(cmd, opts)
		},
	}
	opts.OnDemand.bind(cmd.Flags(), sandboxer.DefaultLockTimeout)
	fs := cmd.Flags()
	fs.StringArrayVar(&opts.SQL, "sql", nil, "a migration `FILE` for the template (repeatable, in order)")
	fs.BoolVar(&opts.CreateDB, "createdb", false, "let the database's role create databases")
	fs.DurationVar(&opts.TTL, "ttl", time.Hour, "how long the database lives unless dropped")
	fs.StringVar(&opts.Prefix, "prefix", "", "start variable names with `PREFIX` instead of SANDBOXER_")
	fs.BoolVar(&opts.JSON, "json", false, "print one JSON object")
	return cmd
}

func databaseCreateRun(cmd *cobra.Command, opts *DatabaseOptions) error {
	f := opts.f
	var texts []string
	for _, p := range opts.SQL {
		b, err := os.ReadFile(f.Path(p))
		if err != nil {
			return fmt.Errorf("--sql: %w", err)
		}
		texts = append(texts, string(b))
	}
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	// Remote: this process exits at once; the TTL, not its pid, ends the
	// lease.
	db, err := s.lib.Database(f.hard, opts.Addr, sandboxer.DatabaseOptions{SQL: texts, CreateDB: opts.CreateDB,
		TTL: opts.TTL, Prefix: opts.Prefix, Remote: true})
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(db)
	}
	views.ShellExports(f.IO.Out, db.Env)
	return nil
}

func newDatabaseDropCmd(f *Factory, runF func(*DatabaseOptions) error) *cobra.Command {
	opts := &DatabaseOptions{f: f}
	cmd := &cobra.Command{
		Use:   "drop ADDR NAME",
		Short: "Drop a database `database create` handed out",
		Long:  "Drop database NAME (its SANDBOXER_POSTGRES_DB or SANDBOXER_MYSQL_DB) of sandbox.NAME's host, with its user; one already gone is fine.",
		Example: "  sandboxer database drop sandbox.db sbxt_0123456789abcdef\n" +
			"  sandboxer database drop sandbox.db \"$SANDBOXER_POSTGRES_DB\" --json",
		Args: rangeArgs(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Addr, opts.Name = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return databaseDropRun(cmd, opts)
		},
	}
	opts.OnDemand.bind(cmd.Flags(), sandboxer.DefaultLockTimeout)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcome as JSON")
	return cmd
}

func databaseDropRun(cmd *cobra.Command, opts *DatabaseOptions) error {
	f := opts.f
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.lib.DropDatabase(f.hard, opts.Addr, opts.Name); err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(f.IO.Out, struct {
			Name    string `json:"name"`
			Dropped bool   `json:"dropped"`
		}{opts.Name, true})
	}
	fmt.Fprintf(f.IO.Out, "Dropped %s.\n", opts.Name)
	return nil
}
