package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowConfig takes seconds to evaluate: n locals, each a function call.
// It stays within the evaluation limits (a nested for that would run for
// minutes is now refused before it starts), so only abandoning the
// evaluation can stop it promptly.
func slowConfig(n int) string {
	var b strings.Builder
	b.WriteString("locals {\n")
	for i := range n {
		fmt.Fprintf(&b, "  l%d = upper(\"v%d\")\n", i, i)
	}
	b.WriteString("}\n")
	b.WriteString("project \"p\" {\n  services = [\"postgres\"]\n}\n")
	return b.String()
}

// TestValidateInterrupt sends SIGTERM to a validate of a configuration
// that takes seconds (150,000 locals: about 4 s here): it must exit 1 within a few seconds, saying
// it was interrupted, without a stack trace. Before, validate ignored the
// signal until evaluation ended.
func TestValidateInterrupt(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, slowConfig(150000))
	p := startSandboxer(t, dir, "validate")
	waitForHandler(t, p.cmd.Process.Pid, syscall.SIGTERM)
	time.Sleep(500 * time.Millisecond) // well into the evaluation
	p.signal(t, syscall.SIGTERM)
	start := time.Now()
	code := p.wait(t, 10*time.Second)
	took := time.Since(start)
	stderr := p.stderrText()
	t.Logf("exit %d after %s\nstderr:\n%s", code, took, stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr, "Error: interrupted: the configuration was not fully loaded") {
		t.Errorf("stderr does not say validate was interrupted")
	}
	// validate changes nothing, so the notice does not speak of changes.
	if !strings.Contains(stderr, "Interrupt received: stopping.") || strings.Contains(stderr, "no new changes") {
		t.Errorf("stderr does not give the read-only interrupt notice")
	}
	if strings.Contains(stderr, "goroutine ") {
		t.Errorf("stack trace on stderr")
	}
}

// waitForHandler waits until process pid catches sig (Linux: the SigCgt
// mask in /proc/PID/status), so a signal sent next reaches the CLI's
// handler rather than killing a process still starting up.
func waitForHandler(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	deadline := time.Now().Add(lineTimeout)
	for time.Now().Before(deadline) {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Skipf("cannot read the process status: %v", err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if mask, ok := strings.CutPrefix(line, "SigCgt:"); ok {
				bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
				if err == nil && bits&(1<<(uint(sig)-1)) != 0 {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d never installed a %v handler", pid, sig)
}
