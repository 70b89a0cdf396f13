package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// TestApplyParallelismTiming applies one sandbox, then three with
// --parallelism 3, and logs how long each took. With three at once the
// whole apply should take about as long as one; timing is logged, not
// asserted, because a loaded 2-core machine makes it noisy (three
// PostgreSQL initdb runs compete for the same CPUs).
func TestApplyParallelismTiming(t *testing.T) {
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
	applyTimed := func(t *testing.T, dir string, n int, args ...string) time.Duration {
		t.Helper()
		writeConfig(t, dir, config(n))
		start := time.Now()
		out, stderr := mustSandboxer(t, dir, append([]string{"apply", "--auto-approve"}, args...)...)
		took := time.Since(start)
		if want := fmt.Sprintf("Sandboxes: %d created", n); !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
		var each []string
		for _, m := range perSandbox.FindAllStringSubmatch(stderr, -1) {
			each = append(each, m[1]+" "+m[2])
		}
		t.Logf("apply of %d sandbox(es) %s took %s (per sandbox: %s)", n, strings.Join(args, " "), took.Round(10*time.Millisecond), strings.Join(each, ", "))
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
	one := applyTimed(t, dir, 1)
	three := applyTimed(t, dir, 3, "--parallelism", "3")
	t.Logf("three at once took %.2fx as long as one (one after another would be about 3x, %s)",
		float64(three)/float64(one), (3 * one).Round(10*time.Millisecond))
}
