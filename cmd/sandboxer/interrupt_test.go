package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

const twoSandboxes = `provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
}

project "shop" {
  services = ["postgres"]
}

sandbox "a" {
  project = project.shop
}

sandbox "b" {
  project = project.shop
}
`

// generous bounds for a loaded 2-core machine; the test waits on output
// lines, never on sleeps, so these only matter when something hangs.
const (
	lineTimeout = 2 * time.Minute
	exitTimeout = 3 * time.Minute
)

// TestApplyInterrupt sends Ctrl-C to a running apply of two sandboxes with
// --parallelism 1. Once: the create in flight finishes and is recorded, the
// other is not started, exit 1 saying "interrupted", and a second apply
// finishes the job. Twice: the create in flight is abandoned and cleaned
// up by the provider, and a later apply and destroy work as usual.
func TestApplyInterrupt(t *testing.T) {
	testenv.RequireDocker(t)
	dir := t.TempDir()
	writeConfig(t, dir, twoSandboxes)
	cleanupLineage(t, dir)

	t.Run("once", func(t *testing.T) {
		p := startSandboxer(t, dir, "apply", "--auto-approve", "--parallelism", "1")
		p.waitFor(t, `^sandbox\.a: Creating\.\.\.$`, lineTimeout)
		p.signal(t, os.Interrupt)
		code := p.wait(t, exitTimeout)
		stderr := p.stderrText()
		t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), stderr)
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		for _, want := range []string{
			"Interrupt received: no new changes will start",
			"sandbox.a: Creation complete after",
			"Error: interrupted: 1 change(s) not started (sandbox.b); run apply again to finish",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q", want)
			}
		}
		if strings.Contains(stderr, "sandbox.b: Creating") {
			t.Errorf("sandbox.b was started after the interrupt")
		}
		if strings.Contains(stderr, "goroutine ") {
			t.Errorf("stack trace on stderr")
		}
		if !strings.Contains(p.stdout.String(), "Sandboxes: 1 created, 0 replaced, 0 destroyed, 0 reused.") {
			t.Errorf("stdout lacks the result line")
		}
		lineage, addrs := stateOf(t, dir)
		if diff := cmp.Diff([]string{"sandbox.a"}, addrs); diff != "" {
			t.Errorf("state (-want +got):\n%s", diff)
		}
		if n := labelled(t, lineage); n != 2 {
			t.Errorf("%d containers and networks labelled, want 2 (sandbox.a's)", n)
		}

		out, _ := mustSandboxer(t, dir, "apply", "--auto-approve")
		if !strings.Contains(out, "Sandboxes: 1 created, 0 replaced, 0 destroyed, 1 reused.") {
			t.Errorf("second apply did not finish the job:\n%s", out)
		}
		if _, addrs := stateOf(t, dir); !slices.Equal(addrs, []string{"sandbox.a", "sandbox.b"}) {
			t.Errorf("state after the second apply: %q", addrs)
		}
		// Two postgres containers and the lineage's one network.
		if n := labelled(t, lineage); n != 3 {
			t.Errorf("%d labelled, want 3", n)
		}
		mustSandboxer(t, dir, "destroy", "--auto-approve")
		if n := labelled(t, lineage); n != 0 {
			t.Errorf("%d labelled after destroy", n)
		}
	})

	t.Run("twice", func(t *testing.T) {
		p := startSandboxer(t, dir, "apply", "--auto-approve", "--parallelism", "1")
		p.waitFor(t, `^sandbox\.a: Creating\.\.\.$`, lineTimeout)
		p.signal(t, os.Interrupt)
		p.waitFor(t, `^Interrupt received`, lineTimeout)
		// Abandon a create that has something to clean up: wait until its
		// container exists (a condition, polled; not a sleep).
		lineage, _ := stateOf(t, dir)
		waitUntil(t, lineTimeout, func() bool { return labelled(t, lineage) >= 2 })
		p.signal(t, os.Interrupt)
		code := p.wait(t, exitTimeout)
		stderr := p.stderrText()
		t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), stderr)
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		if !strings.Contains(stderr, "not started (sandbox.b)") {
			t.Errorf("stderr does not say sandbox.b was not started")
		}
		if strings.Contains(stderr, "sandbox.b: Creating") {
			t.Errorf("sandbox.b was started after the interrupt")
		}
		_, addrs := stateOf(t, dir)
		n := labelled(t, lineage)
		t.Logf("left after two interrupts: records %q, %d containers and networks labelled", addrs, n)
		switch {
		case strings.Contains(stderr, "sandbox.a: Creation failed after"):
			// The usual case: abandoned and cleaned up by the provider.
			if len(addrs) != 0 || n != 0 {
				t.Errorf("abandoned create left records %q and %d labelled resources, want none", addrs, n)
			}
			if !strings.Contains(stderr, "Error: sandbox.a: create: interrupted: context canceled") {
				t.Errorf("stderr does not say sandbox.a was interrupted")
			}
		case strings.Contains(stderr, "sandbox.a: Creation complete after"):
			// A very slow machine: the create finished before the second
			// signal landed; then it must be recorded.
			if !slices.Equal(addrs, []string{"sandbox.a"}) || n != 2 {
				t.Errorf("finished create: records %q and %d labelled, want sandbox.a and 2", addrs, n)
			}
		default:
			t.Errorf("stderr says nothing about how sandbox.a ended")
		}

		out, _ := mustSandboxer(t, dir, "apply", "--auto-approve")
		if !strings.Contains(out, "Sandboxes: 2 created") && !strings.Contains(out, "Sandboxes: 1 created, 0 replaced, 0 destroyed, 1 reused.") {
			t.Errorf("apply after the abandoned one:\n%s", out)
		}
		// Two postgres containers and the lineage's one network.
		if n := labelled(t, lineage); n != 3 {
			t.Errorf("%d labelled, want 3", n)
		}
		mustSandboxer(t, dir, "destroy", "--auto-approve")
		if n := labelled(t, lineage); n != 0 {
			t.Errorf("%d labelled after destroy", n)
		}
	})
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %s", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
