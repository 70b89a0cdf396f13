package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// TestApplyParallelismOverlaps applies three sandboxes with --parallelism
// 3, then with --parallelism 1, and checks from the progress lines that
// the first three creates ran at once (every "Creating..." before the
// first "Creation complete") and the last three one after another (each
// "Creating..." after the one before completed). Ordering, not time: a
// loaded 2-core machine makes durations noisy, so they are only logged.
func TestApplyParallelismOverlaps(t *testing.T) {
	testenv.RequireDocker(t)
	config := func(n int) string {
		var b strings.Builder
		b.WriteString("provider \"docker\" {\n  image \"postgres\" { ref = \"sandboxer.local/postgres:17\" }\n}\n\n")
		b.WriteString("project \"shop\" {\n  services = [\"postgres\"]\n}\n")
		for i := range n {
			fmt.Fprintf(&b, "\nsandbox \"s%d\" {\n  project = project.shop\n}\n", i)
		}
		return b.String()
	}
	perSandbox := regexp.MustCompile(`(sandbox\.\S+): Creation complete after (\S+)`)
	progress := regexp.MustCompile(`(sandbox\.\S+): (Creating\.\.\.|Creation complete)`)
	// inFlight is the most creates running at once, read off stderr.
	inFlight := func(stderr string) int {
		running, most := 0, 0
		for _, m := range progress.FindAllStringSubmatch(stderr, -1) {
			if m[2] == "Creating..." {
				running++
				most = max(most, running)
			} else {
				running--
			}
		}
		return most
	}
	applyTimed := func(t *testing.T, dir string, n, parallelism int) time.Duration {
		t.Helper()
		writeConfig(t, dir, config(n))
		start := time.Now()
		out, stderr := mustSandboxer(t, dir, "apply", "--auto-approve", "--parallelism", fmt.Sprint(parallelism))
		took := time.Since(start)
		if got := inFlight(stderr); got != min(n, parallelism) {
			t.Errorf("--parallelism %d: at most %d of %d creates ran at once, want %d; stderr:\n%s", parallelism, got, n, min(n, parallelism), stderr)
		}
		if want := fmt.Sprintf("Sandboxes: %d created", n); !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
		var each []string
		for _, m := range perSandbox.FindAllStringSubmatch(stderr, -1) {
			each = append(each, m[1]+" "+m[2])
		}
		t.Logf("apply of %d sandbox(es) with --parallelism %d took %s (per sandbox: %s)", n, parallelism, took.Round(10*time.Millisecond), strings.Join(each, ", "))
		lineage, addrs := stateOf(t, dir)
		if len(addrs) != n {
			t.Errorf("state holds %q, want %d records", addrs, n)
		}
		// One container each, and the lineage's one network.
		if got := labelled(t, lineage); got != n+1 {
			t.Errorf("%d labelled, want %d", got, n+1)
		}
		mustSandboxer(t, dir, "destroy", "--auto-approve")
		if got := labelled(t, lineage); got != 0 {
			t.Errorf("%d labelled after destroy", got)
		}
		return took
	}

	dir := t.TempDir()
	cleanupLineage(t, dir)
	parallel := applyTimed(t, dir, 3, 3)
	serial := applyTimed(t, dir, 3, 1)
	t.Logf("three at once took %.2fx as long as one after another", float64(parallel)/float64(serial))
}
