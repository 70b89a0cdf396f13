package postgres

import (
	"os/exec"
	"strings"
	"testing"
)

// TestForkHoldScript: the hold script parses as a POSIX shell script,
// and inside the hold (from the first stop to the resume) it starts no
// process but the second pass's find and copy: every other step there
// is the shell's own, since each process costs milliseconds on a
// loaded host.
func TestForkHoldScript(t *testing.T) {
	script := forkHoldScript(ForkStageDir("fork-0123"))
	if sh, err := exec.LookPath("sh"); err == nil {
		cmd := exec.Command(sh, "-n")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sh -n: %v: %s", err, out)
		}
	}
	begin := strings.Index(script, "\nstop_all\n")
	end := strings.Index(script, "\nkill -CONT $pids")
	if begin < 0 || end < begin {
		t.Fatal("the script has no stop_all ... kill -CONT hold")
	}
	hold := script[begin:end]
	for _, cmd := range []string{"$(", "date", "sleep", "cat ", "mkdir", "wc "} {
		if strings.Contains(hold, cmd) {
			t.Errorf("the hold runs %q", cmd)
		}
	}
	if !strings.Contains(hold, "copy_changed") {
		t.Error("the hold makes no second pass")
	}
}
