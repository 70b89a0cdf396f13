package sandboxer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/providers/fake"
)

// RunTests: runs share the file's own state in order, assertions see
// the plan, an apply run's sandboxes are destroyed at the end of the
// file, a failing run does not stop the next, and the project's state is
// never touched.
func TestRunTests(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"main.sbx.hcl": `
variable "n" {
  type    = number
  default = 1
}

project "p" {
  services = ["postgres"]
}

sandbox "s" {
  for_each = toset([for i in range(var.n) : "k${i}"])
  project  = project.p
}
`,
		"a.sbtest.hcl": `
run "apply_two" {
  variables {
    n = 2
  }
  assert {
    condition     = plan.create == 2 && sandbox.s["k1"].action == "create"
    error_message = "two creates"
  }
}

run "wrong" {
  command = plan
  variables {
    n = 2
  }
  assert {
    condition     = plan.create == 1
    error_message = "wrong on purpose"
  }
}

run "shrink" {
  command = plan
  assert {
    condition     = plan.delete == 1 && plan.reuse == 1 && run.apply_two.plan.create == 2
    error_message = "one of two deleted"
  }
}
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := fake.New(nil)
	var hooked []string
	report, err := sandboxer.RunTests(context.Background(), dir, sandboxer.Options{Provider: p, Environ: []string{}},
		sandboxer.TestOptions{Hook: recordingHook{&hooked}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range report.Files {
		for _, r := range f.Runs {
			got = append(got, f.Name+" "+r.Name+" "+string(r.Status))
		}
		got = append(got, f.Name+" "+string(f.Status))
	}
	want := []string{"a.sbtest.hcl apply_two pass", "a.sbtest.hcl wrong fail", "a.sbtest.hcl shrink pass", "a.sbtest.hcl fail"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"start a.sbtest.hcl", "run apply_two", "run wrong", "run shrink", "teardown", "done a.sbtest.hcl"}, hooked); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	if passed, failed, skipped := report.Counts(); passed != 2 || failed != 1 || skipped != 0 || !report.Failed() {
		t.Errorf("Counts = %d, %d, %d; Failed = %v", passed, failed, skipped, report.Failed())
	}
	if live := p.Live(); len(live) != 0 {
		t.Errorf("left live after the teardown: %v", live)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sandboxer")); err == nil {
		t.Error("the test wrote a .sandboxer directory: the project's state is not a test's")
	}
}

type recordingHook struct{ calls *[]string }

func (h recordingHook) FileStart(f *sandboxer.TestFileResult) {
	*h.calls = append(*h.calls, "start "+f.Name)
}
func (h recordingHook) RunDone(f *sandboxer.TestFileResult, r *sandboxer.TestRunResult) {
	*h.calls = append(*h.calls, "run "+r.Name)
}
func (h recordingHook) TeardownStart(*sandboxer.TestFileResult) {
	*h.calls = append(*h.calls, "teardown")
}
func (h recordingHook) FileDone(f *sandboxer.TestFileResult) {
	*h.calls = append(*h.calls, "done "+f.Name)
}
