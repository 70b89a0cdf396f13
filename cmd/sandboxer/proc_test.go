package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// Helpers for tests that must watch a running sandboxer process (signals,
// timing), which testscript cannot: it only shows a background command's
// output once it has exited.

// proc is a sandboxer process whose stderr is read line by line as it
// comes.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  chan string // every stderr line, in order

	mu     sync.Mutex
	stderr []string
	done   chan struct{} // closed when stderr hits EOF
}

// sandboxerCmd runs this test binary as `sandboxer`: testscript.Main, in
// TestMain, dispatches on argv[0].
func sandboxerCmd(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = "sandboxer"
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	return cmd
}

// startSandboxer starts sandboxer in dir and reads its stderr in the
// background. The process is killed if the test ends first.
func startSandboxer(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: sandboxerCmd(t, dir, args...), lines: make(chan string, 1024), done: make(chan struct{})}
	p.cmd.Stdout = &p.stdout
	errPipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default: // nobody is waiting for lines this far on
			}
		}
	}()
	return p
}

// waitFor blocks until a stderr line matches re, failing the test when the
// process ends or timeout passes first. Waiting on output, not on sleeps,
// keeps this robust on a loaded machine.
func (p *proc) waitFor(t *testing.T, re string, timeout time.Duration) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(timeout)
	for {
		select {
		case line := <-p.lines:
			if rx.MatchString(line) {
				return
			}
		case <-p.done:
			// Drain what was read before EOF.
			for {
				select {
				case line := <-p.lines:
					if rx.MatchString(line) {
						return
					}
				default:
					t.Fatalf("sandboxer ended before printing %q; stderr:\n%s", re, p.stderrText())
				}
			}
		case <-deadline:
			t.Fatalf("no %q after %s; stderr so far:\n%s", re, timeout, p.stderrText())
		}
	}
}

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() {
		<-p.done
		exited <- p.cmd.Wait()
	}()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		t.Fatalf("sandboxer still running after %s; stderr so far:\n%s", timeout, p.stderrText())
		return -1
	}
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, "\n")
}

// runSandboxer runs sandboxer to completion and returns its exit code and
// output.
func runSandboxer(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := sandboxerCmd(t, dir, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// mustSandboxer runs sandboxer and fails the test unless it exits 0.
func mustSandboxer(t *testing.T, dir string, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runSandboxer(t, dir, args...)
	if code != 0 {
		t.Fatalf("sandboxer %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout, stderr
}

// stateOf returns the lineage and the sorted addresses in dir's state.
func stateOf(t *testing.T, dir string) (lineage string, addrs []string) {
	t.Helper()
	snap, err := state.Open(filepath.Join(dir, ".sandboxer", "state.db")).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for a := range snap.Records {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	return snap.Lineage, addrs
}

// labelled counts the containers and networks carrying lineage, as the
// scripts' `labelled` command does.
func labelled(t *testing.T, lineage string) int {
	t.Helper()
	if lineage == "" {
		t.Fatal("labelled: no lineage")
	}
	filter := "label=dev.sandboxer.lineage=" + lineage
	n := 0
	for _, argv := range [][]string{
		{"ps", "-aq", "--filter", filter},
		{"network", "ls", "-q", "--filter", filter},
	} {
		out, err := exec.Command("docker", argv...).Output()
		if err != nil {
			t.Fatalf("docker %s: %v", strings.Join(argv, " "), err)
		}
		n += len(strings.Fields(string(out)))
	}
	return n
}

// cleanupLineage force-removes whatever a failed test left labelled.
func cleanupLineage(t *testing.T, dir string) {
	t.Cleanup(func() {
		lineage, _ := stateOf(t, dir)
		if lineage == "" {
			return
		}
		removeLabelled(lineage)
	})
}

// removeLabelled removes the containers, networks and volumes labelled
// with lineage.
func removeLabelled(lineage string) {
	filter := "label=dev.sandboxer.lineage=" + lineage
	for _, argv := range [][]string{{"ps", "-aq", "--filter", filter}, {"network", "ls", "-q", "--filter", filter}, {"volume", "ls", "-q", "--filter", filter}} {
		out, _ := exec.Command("docker", argv...).Output()
		ids := strings.Fields(string(out))
		if len(ids) == 0 {
			continue
		}
		rm := []string{"rm", "-f", "-v"}
		if argv[0] == "network" || argv[0] == "volume" {
			rm = []string{argv[0], "rm"}
		}
		_ = exec.Command("docker", append(rm, ids...)...).Run()
	}
}

func writeConfig(t *testing.T, dir, hcl string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
}
