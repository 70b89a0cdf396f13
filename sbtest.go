package sandboxer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// `sandboxer test`, Terraform's `terraform test`: each *.sbtest.hcl
// file runs its run blocks in order against a state of its own (never
// the project's), then destroys what its apply runs created.

// TestStatus is a run's or a file's outcome, in Terraform's words.
type TestStatus string

const (
	TestPass  TestStatus = "pass"
	TestFail  TestStatus = "fail"  // an assertion failed, or an expected failure did not happen
	TestError TestStatus = "error" // the plan or apply itself failed; later runs are skipped
	TestSkip  TestStatus = "skip"
)

// TestOptions are `sandboxer test`'s settings.
type TestOptions struct {
	// Filter keeps only these test files (as listed: main.sbtest.hcl,
	// tests/ci.sbtest.hcl); all when empty.
	Filter []string
	// InMemory runs every file against the in-memory runtime
	// (providers/fake): no engine, credentials that point nowhere; for
	// fast tests of what a configuration plans and applies.
	InMemory bool
	// Hook hears each file and run as it ends; nil ignores them.
	Hook TestHook
}

// TestHook is how a front end shows a test run as it goes.
type TestHook interface {
	FileStart(f *TestFileResult)
	RunDone(f *TestFileResult, r *TestRunResult)
	TeardownStart(f *TestFileResult)
	FileDone(f *TestFileResult)
}

// TestReport is the outcome of every test file.
type TestReport struct {
	Files []*TestFileResult
	// Diagnostics are problems before any file ran (a --filter that
	// names no file).
	Diagnostics hcl.Diagnostics
}

// Counts are the runs that passed, failed (or errored) and were skipped.
func (r *TestReport) Counts() (passed, failed, skipped int) {
	for _, f := range r.Files {
		for _, run := range f.Runs {
			switch run.Status {
			case TestPass:
				passed++
			case TestSkip:
				skipped++
			default:
				failed++
			}
		}
	}
	return passed, failed, skipped
}

// Failed reports whether anything did not pass.
func (r *TestReport) Failed() bool {
	if r.Diagnostics.HasErrors() {
		return true
	}
	for _, f := range r.Files {
		if f.Status != TestPass {
			return true
		}
	}
	return false
}

// TestFileResult is one test file's outcome. Diagnostics are its own
// (decoding, teardown); Files holds every parsed file its diagnostics and
// its runs' may point into, for rendering.
type TestFileResult struct {
	Name        string
	Status      TestStatus
	Runs        []*TestRunResult
	Diagnostics hcl.Diagnostics
	Files       map[string]*hcl.File
	Started     time.Time
	Duration    time.Duration
}

// TestRunResult is one run block's outcome: Diagnostics hold the failed
// assertions (errors) and the check blocks' problems (warnings).
type TestRunResult struct {
	Name        string
	Command     string
	Status      TestStatus
	Diagnostics hcl.Diagnostics
	Started     time.Time
	Duration    time.Duration
	// Plan is the run's plan (nil when none was made).
	Plan *plan.Plan
}

// RunTests runs the test files of dir (and dir/tests). Options are
// those of Open; their state settings are ignored: each file gets a
// fresh state in a temporary directory, removed at its end.
func RunTests(ctx context.Context, dir string, opts Options, to TestOptions) (*TestReport, error) {
	files, diags := config.LoadTestFiles(dir, to.Filter)
	report := &TestReport{}
	if diags.HasErrors() && len(files) == 0 {
		report.Diagnostics = diags
		return report, nil
	}
	byName := map[string]hcl.Diagnostics{}
	for _, d := range diags {
		if d.Subject != nil {
			byName[d.Subject.Filename] = append(byName[d.Subject.Filename], d)
		} else {
			report.Diagnostics = append(report.Diagnostics, d)
		}
	}
	for _, tf := range files {
		if err := ctx.Err(); err != nil {
			return report, err
		}
		fr := &TestFileResult{Name: tf.Name, Files: map[string]*hcl.File{tf.Name: tf.File}, Started: time.Now()}
		report.Files = append(report.Files, fr)
		hookFileStart(to.Hook, fr)
		if d := byName[tf.Name]; d.HasErrors() {
			// No run of a file that does not decode is run (nor counted).
			fr.Diagnostics, fr.Status = d, TestError
			fr.Duration = time.Since(fr.Started)
			hookFileDone(to.Hook, fr)
			continue
		}
		if err := runTestFile(ctx, dir, opts, to, tf, fr); err != nil {
			return report, err
		}
		fr.Duration = time.Since(fr.Started)
		hookFileDone(to.Hook, fr)
	}
	return report, nil
}

// testFile is what the runs of one file share: its state and runtime,
// the values of the runs so far (run.NAME), and the last configuration an
// apply run used, which tears down.
type testFile struct {
	dir       string
	opts      Options
	tf        *config.TestFile
	fr        *TestFileResult
	runs      map[string]cty.Value
	teardown  *config.Config
	statePath string
}

func runTestFile(ctx context.Context, dir string, opts Options, to TestOptions, tf *config.TestFile, fr *TestFileResult) error {
	tmp, err := os.MkdirTemp("", "sandboxer-test-*")
	if err != nil {
		return fmt.Errorf("test %s: state directory: %w", tf.Name, err)
	}
	defer os.RemoveAll(tmp)
	// The file's own state: never the project's, whatever Options or
	// the configuration's backend block say.
	opts.StatePath = filepath.Join(tmp, "state.db")
	keys, err := state.KeyringFromEnv(func(k string) string { return lookupEnv(opts.environ(), k) })
	if err != nil {
		return fmt.Errorf("test %s: %w", tf.Name, err)
	}
	opts.Backend = state.Open(opts.StatePath, state.WithKeyring(keys))
	opts.CADir = filepath.Join(tmp, "ca")
	if to.InMemory {
		opts.Provider = inMemoryProvider(opts.Catalog)
	}
	t := &testFile{dir: dir, opts: opts, tf: tf, fr: fr, runs: map[string]cty.Value{}, statePath: opts.StatePath}
	fr.Status = TestPass
	stop := false
	for _, run := range tf.Runs {
		rr := &TestRunResult{Name: run.Name, Command: run.Command, Status: TestSkip, Started: time.Now()}
		fr.Runs = append(fr.Runs, rr)
		if closed(opts.Interrupt) {
			stop = true // Ctrl-C: no new run starts; what was made is torn down
		}
		if !stop {
			t.run(ctx, run, rr)
			rr.Duration = time.Since(rr.Started)
		}
		switch rr.Status {
		case TestError:
			// After a failed apply the state may be half-made: skip the
			// rest, as Terraform does. A plan changed nothing.
			stop = stop || run.Command == config.TestCommandApply
			fr.Status = TestError
		case TestFail:
			if fr.Status == TestPass {
				fr.Status = TestFail
			}
		}
		if to.Hook != nil {
			to.Hook.RunDone(fr, rr)
		}
	}
	if t.teardown == nil {
		return nil
	}
	if to.Hook != nil {
		to.Hook.TeardownStart(fr)
	}
	// Everything the apply runs made is in this one state: one destroy
	// of it, with the last configuration applied.
	s := FromConfig(dir, t.teardown, opts)
	defer s.Close()
	dctx := context.WithoutCancel(ctx)
	if _, _, err := s.Destroy(dctx, PlanOptions{}, ApplyOptions{}); err != nil {
		// The state goes with the temporary directory: say what is left
		// and how to find it (Terraform lists what it left too).
		left, lineage := "", "unknown"
		if snap, serr := s.store.Snapshot(dctx); serr == nil {
			lineage = snap.Lineage
			for _, r := range snap.Records {
				left += " " + r.Address
			}
		}
		fr.Status = TestError
		fr.Diagnostics = append(fr.Diagnostics, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Failed to clean up after the tests",
			Detail: fmt.Sprintf("Destroying what %s created failed: %v. Left behind:%s. Their containers, networks and volumes carry the label dev.sandboxer.lineage=%s; remove them with docker rm -f, docker network rm and docker volume rm.", tf.Name, err, left, lineage)})
	}
	return nil
}

// run carries out one run block: load the configuration with the run's
// variables, plan (and apply), then judge the checks, the expected
// failures and the assertions.
func (t *testFile) run(ctx context.Context, run *config.TestRun, rr *TestRunResult) {
	fail := func(status TestStatus, diags ...*hcl.Diagnostic) {
		rr.Status = status
		rr.Diagnostics = append(rr.Diagnostics, diags...)
	}
	in := t.opts.input(t.dir)
	in.Values = append(append(in.Values, t.tf.Variables...), run.Variables...)
	cat := t.opts.Catalog
	if cat == nil {
		cat = config.DefaultCatalog()
	}
	cfg, diags := config.LoadContext(ctx, t.dir, in, cat)
	for name, f := range cfg.Files {
		t.fr.Files[name] = f
	}
	expected := map[string]bool{}
	for _, e := range run.ExpectFailures {
		expected[e.Addr()] = false
	}
	if diags.HasErrors() {
		// A variable's validation failing is what expect_failures =
		// [var.NAME] asks for; any other error is the run's error.
		var other hcl.Diagnostics
		for _, d := range diags {
			if name, ok := config.FailedVariable(d); ok {
				if _, want := expected["var."+name]; want {
					expected["var."+name] = true
					continue
				}
			}
			other = append(other, d)
		}
		if other.HasErrors() {
			fail(TestError, other...)
			return
		}
		if missing := missingFailures(run, expected); len(missing) > 0 {
			fail(TestFail, missing...)
			return
		}
		rr.Status = TestPass // the configuration was refused, as expected
		return
	}
	rr.Diagnostics = append(rr.Diagnostics, diags...) // warnings
	if d := cfg.CheckTestRun(run); d.HasErrors() {
		fail(TestError, d...)
		return
	}
	s := FromConfig(t.dir, cfg, t.opts)
	defer s.Close()
	var p *plan.Plan
	var err error
	if run.Command == config.TestCommandPlan {
		p, err = s.Plan(ctx, PlanOptions{})
	} else {
		p, _, err = s.PlanAndApply(ctx, PlanOptions{}, ApplyOptions{})
		if p != nil && p.HasChanges() {
			t.teardown = cfg // something may have been made, even if the apply failed
		}
	}
	rr.Plan = p
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			fail(TestError, ce.Diagnostics...)
			return
		}
		fail(TestError, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Failed to " + run.Command,
			Detail: fmt.Sprintf("run %q: %s.", run.Name, err), Subject: run.DeclRange.Ptr()})
		return
	}
	sb, pv := plan.CheckValues(p)
	vars := map[string]cty.Value{"sandbox": sb, "plan": pv, "run": cty.ObjectVal(t.runs)}
	out := cty.EmptyObjectVal
	if run.Command == config.TestCommandApply {
		o, d := s.outputValues(ctx)
		if d.HasErrors() {
			fail(TestError, d...)
			return
		}
		out = o
	}
	vars["output"] = out
	t.runs[run.Name] = cty.ObjectVal(map[string]cty.Value{"sandbox": sb, "plan": pv, "output": out})

	// Check blocks: a failure is a warning (the run still passes), or
	// what an expect_failures entry asks for.
	for _, c := range cfg.RunChecks(sb, pv, false) {
		key := "check." + c.Check.Name
		if _, want := expected[key]; want {
			expected[key] = c.Status == config.CheckFail
			if c.Status != config.CheckError {
				continue
			}
		}
		rr.Diagnostics = append(rr.Diagnostics, c.Problems...)
	}
	problems, _ := cfg.EvalAssertions(config.Assertions{Kind: "run", Name: run.Name, Asserts: run.Asserts, Severity: hcl.DiagError}, vars)
	missing := missingFailures(run, expected)
	rr.Status = TestPass
	if len(problems) > 0 || len(missing) > 0 {
		fail(TestFail, append(problems, missing...)...)
	}
}

// missingFailures are the expect_failures entries that did not fail.
func missingFailures(run *config.TestRun, got map[string]bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, e := range run.ExpectFailures {
		if !got[e.Addr()] {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing expected failure",
				Detail: fmt.Sprintf("run %q expected %s to fail, but it did not.", run.Name, e.Addr()), Subject: e.Range.Ptr()})
		}
	}
	return diags
}

// outputValues evaluates the configuration's outputs against state.
func (s *Sandboxer) outputValues(ctx context.Context) (cty.Value, hcl.Diagnostics) {
	snap, err := s.store.Snapshot(ctx)
	if err != nil {
		return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Failed to read state", Detail: err.Error()}}
	}
	outs, diags := OutputValues(s.cfg, snap)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return cty.ObjectVal(outs), diags
}

// OutputValues evaluates cfg's outputs against the records of snap: what
// apply and `output` print, and what `sandboxer test` asserts on.
func OutputValues(cfg *config.Config, snap *state.Snapshot) (map[string]cty.Value, hcl.Diagnostics) {
	vals := map[config.Address]map[string]map[string]string{}
	for _, r := range snap.Records {
		addr, err := config.ParseAddress(r.Address)
		if err != nil {
			continue
		}
		svcs := map[string]map[string]string{}
		for svc, c := range r.Credentials {
			svcs[svc] = c.Attributes(svc)
		}
		vals[addr] = svcs
	}
	return cfg.EvalOutputs(vals)
}

func (o Options) environ() []string {
	if o.Environ == nil {
		return os.Environ()
	}
	return o.Environ
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func hookFileStart(h TestHook, f *TestFileResult) {
	if h != nil {
		h.FileStart(f)
	}
}

func hookFileDone(h TestHook, f *TestFileResult) {
	if h != nil {
		h.FileDone(f)
	}
}
