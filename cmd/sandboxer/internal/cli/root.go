package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sandboxer/sandboxer/config"
)

// Main runs sandboxer with the process's arguments and streams and returns
// the exit code.
func Main() int {
	// Linking runtime/pprof (for SANDBOXER_CPUPROFILE) turns the runtime's
	// heap-profile sampling on, which nothing here reads; it cost every
	// command about 2 MiB of resident memory.
	runtime.MemProfileRate = 0
	// go-redis logs every refused dial of a liveness probe to stderr; the
	// probe's own error already says what happened.
	redis.SetLogger(quietLogger{})
	f := &Factory{
		IO: IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
			OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
			ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
			InTTY:  term.IsTerminal(int(os.Stdin.Fd()))},
		Environ: os.Environ(),
		Now:     time.Now,
		Catalog: config.DefaultCatalog(),
	}
	oneShotGC(f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupt := make(chan struct{})
	f.Interrupt = interrupt
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		close(interrupt)
		fmt.Fprintln(f.IO.Err, "\n"+f.interruptNotice())
		<-sigs
		cancel()
	}()
	stop := startProfile(f)
	defer stop()
	return Run(ctx, f, os.Args[1:])
}

// quietLogger discards go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Run executes one command line against a factory. ctx is the hard
// context (second Ctrl-C); commands see one that also ends at the first.
func Run(ctx context.Context, f *Factory, args []string) int {
	f.hard = ctx
	soft, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-f.Interrupt:
			cancel()
		case <-soft.Done():
		}
	}()
	root := NewRootCmd(f)
	root.SetArgs(args)
	err := root.ExecuteContext(soft)
	return exitCode(err, f.IO.Err)
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "sandboxer",
		Short: "Plan, apply and destroy disposable PostgreSQL and Redis sandboxes declared in HCL",
		Long: "sandboxer reads the *.sbx.hcl files of a directory (which services each project\n" +
			"may use, with which extensions), diffs them against a local state file and\n" +
			"reuses a cached sandbox when it covers what is asked, or replaces it with\n" +
			"rotated credentials when it does not. Agents ask for keyed on-demand sandboxes\n" +
			"with request/release/extend, or over HTTP with serve.",
		Example: "  sandboxer init && sandboxer plan && sandboxer apply\n" +
			"  eval \"$(sandboxer env sandbox.dev)\"\n" +
			"  sandboxer request sandbox.agent --key dev-7 --profile rag --json\n" +
			"  source <(sandboxer completion bash)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetVersionTemplate("sandboxer v{{.Version}}\n")
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &ExitError{Code: 1, Err: usageError(c, err)}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&f.Global.Chdir, "chdir", "", "use `DIR` as the configuration directory")
	pf.StringVar(&f.Global.State, "state", "", "state file `PATH` (default DIR/.sandboxer/state.db)")
	pf.StringVar(&f.Global.Backend, "backend", "", "state backend `URL`: postgres://… (better: "+EnvBackendURL+"), or file (default)")
	pf.BoolVar(&f.Global.NoColor, "no-color", false, "disable colour output (also NO_COLOR)")
	pf.StringVar(&f.Global.Tenant, "tenant", "", "act as tenant `NAME` on a shared state: keys are the tenant's, only its own instances are seen (also SANDBOXER_TENANT)")

	root.AddCommand(
		newInitCmd(f, nil),
		newValidateCmd(f, nil),
		newFmtCmd(f, nil),
		newPlanCmd(f, nil),
		newShowCmd(f, nil),
		newApplyCmd(f, nil),
		newDestroyCmd(f, nil),
		newEnvCmd(f, nil),
		newConnectCmd(f, nil),
		newOutputCmd(f, nil),
		newStateCmd(f),
		newVersionCmd(f),
		newRequestCmd(f, nil),
		newReleaseCmd(f, nil),
		newExtendCmd(f, nil),
		newForkCmd(f, nil),
		newReapCmd(f, nil),
		newServeCmd(f, nil),
		newMCPCmd(f, nil),
		newDatabaseCmd(f),
		newSnapshotCmd(f, nil),
		newRestoreCmd(f, nil),
		newResetCmd(f, nil),
		newPoolCmd(f),
		newTestCmd(f, nil),
	)
	completeAddressFlags(f, root)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		f.readOnly.Store(readOnlyCommand(cmd.CommandPath()))
		return actAsTenant(cmd, f)
	}
	return root
}

// readOnlyCommand reports whether the command at path changes no sandbox
// and no state, so that an interrupt just stops it.
func readOnlyCommand(path string) bool {
	switch strings.TrimPrefix(path, "sandboxer ") {
	case "validate", "fmt", "plan", "show", "env", "output", "version",
		"state list", "state show", "snapshot list", "pool status":
		return true
	}
	return false
}

// interruptNotice is what the first Ctrl-C prints.
func (f *Factory) interruptNotice() string {
	if f.readOnly.Load() {
		return "Interrupt received: stopping."
	}
	return "Interrupt received: no new changes will start; finishing or rolling back those in flight. Press Ctrl-C again to stop at once."
}
