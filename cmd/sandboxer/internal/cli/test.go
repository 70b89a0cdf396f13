package cli

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/internal/views"
)

// TestOptions are the flags of `sandboxer test`.
type TestOptions struct {
	f        *Factory
	Vars     VarOptions
	Filter   []string
	InMemory bool
	JUnitXML string
	JSON     bool
	Verbose  bool
}

func newTestCmd(f *Factory, runF func(*TestOptions) error) *cobra.Command {
	opts := &TestOptions{f: f}
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Run the *.sbtest.hcl tests: plan or apply, then assert",
		Long: "Run every *.sbtest.hcl file in the configuration directory and its tests\n" +
			"directory, as terraform test runs *.tftest.hcl files. Each run block plans or\n" +
			"applies the configuration with its variables, then checks its assert blocks\n" +
			"and expect_failures. Each file has a state of its own, never the project's;\n" +
			"what its apply runs created is destroyed when the file ends. --in-memory runs\n" +
			"against the in-memory runtime (no engine, nothing started: fast tests of what\n" +
			"a configuration plans); without it the configured engine is used. Exits 1\n" +
			"when a run fails.",
		Example: "  sandboxer test --in-memory\n" +
			"  sandboxer test --filter tests/ci.sbtest.hcl --junit-xml report.xml",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return testRun(cmd, opts)
		},
	}
	fs := cmd.Flags()
	opts.Vars.bind(fs)
	fs.StringArrayVar(&opts.Filter, "filter", nil, "run only this test `FILE` (repeatable)")
	fs.BoolVar(&opts.InMemory, "in-memory", false, "run against the in-memory runtime instead of the engine")
	fs.StringVar(&opts.JUnitXML, "junit-xml", "", "also write the results as JUnit XML to `FILE`")
	fs.BoolVar(&opts.Verbose, "verbose", false, "print each run's plan after its result line")
	fs.BoolVar(&opts.JSON, "json", false, "print the results as one JSON object (instead of the lines as they come)")
	return cmd
}

func testRun(cmd *cobra.Command, opts *TestOptions) error {
	f := opts.f
	in := opts.Vars.input(f)
	var hook sandboxer.TestHook = &testHook{f: f, verbose: opts.Verbose}
	if opts.JSON {
		hook = nil
	}
	report, err := sandboxer.RunTests(f.hard, f.Dir(), sandboxer.Options{
		Catalog: f.Catalog, Environ: in.Environ, Now: f.Now, VarArgs: in.Args, Interrupt: f.Interrupt,
		PullProgress: f.IO.Err,
	}, sandboxer.TestOptions{Filter: opts.Filter, InMemory: opts.InMemory, Hook: hook})
	if err != nil {
		return err
	}
	switch {
	case opts.JSON:
		if err := views.TestJSON(f.IO.Out, report); err != nil {
			return err
		}
	default:
		if len(report.Diagnostics) > 0 {
			renderDiagsFiles(f, nil, report.Diagnostics)
		}
		views.TestSummary(f.IO.Out, report, f.Color())
	}
	if opts.JUnitXML != "" {
		var b bytes.Buffer
		if err := views.TestJUnit(&b, report); err != nil {
			return err
		}
		if err := os.WriteFile(f.Path(opts.JUnitXML), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write the JUnit report: %w", err)
		}
	}
	if report.Failed() {
		return errReported
	}
	return nil
}

// testHook prints each file and run as it ends, with its diagnostics.
type testHook struct {
	f       *Factory
	verbose bool // the run's plan after its line (terraform test -verbose)
}

func (h *testHook) FileStart(fr *sandboxer.TestFileResult) { views.TestFileStart(h.f.IO.Out, fr) }

func (h *testHook) RunDone(fr *sandboxer.TestFileResult, r *sandboxer.TestRunResult) {
	views.TestRun(h.f.IO.Out, r, h.f.Color())
	if h.verbose && r.Plan != nil {
		views.PlanText(h.f.IO.Out, r.Plan, h.f.Color())
		fmt.Fprintln(h.f.IO.Out)
	}
	if len(r.Diagnostics) > 0 {
		renderDiagsFiles(h.f, fr.Files, r.Diagnostics)
	}
}

func (h *testHook) TeardownStart(fr *sandboxer.TestFileResult) { views.TestTeardown(h.f.IO.Out, fr) }

func (h *testHook) FileDone(fr *sandboxer.TestFileResult) {
	if len(fr.Diagnostics) > 0 {
		renderDiagsFiles(h.f, fr.Files, fr.Diagnostics)
	}
	views.TestFileDone(h.f.IO.Out, fr, h.f.Color())
}
