package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
)

const parallelConfig = `
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
}

project "cache" {
  services = ["redis"]
}

sandbox "kv" {
  project   = project.cache
  on_demand = true
  ttl       = "10m"
}
`

// TestOnDemandDifferentInstancesDoNotWait execs the real binary while the
// test holds one instance's lock, as a command provisioning it would: a
// request of another key goes through at once, one of the held key is
// refused busy. No timing: the lock independence itself is what fails if
// different instances were serialised.
func TestOnDemandDifferentInstancesDoNotWait(t *testing.T) {
	testenv.RequireDocker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(parallelConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cleanupLineage(t, dir)
	sbx := func(args ...string) (string, error) {
		out, err := exec.Command("sandboxer", append([]string{"--chdir", dir}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := sbx("request", "sandbox.kv", "--key", "first"); err != nil { // creates the state
		t.Fatalf("request: %v\n%s", err, out)
	}
	unlock, err := state.Open(filepath.Join(dir, ".sandboxer", "state.db")).LockInstance(context.Background(), `sandbox.kv["held"]`, "test holds it", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if out, err := sbx("request", "sandbox.kv", "--key", "other", "--lock-timeout", "2s"); err != nil {
		t.Errorf("a request of another key waited for the held one: %v\n%s", err, out)
	}
	out, err := sbx("request", "sandbox.kv", "--key", "held", "--lock-timeout", "300ms")
	if err == nil || !strings.Contains(out, "test holds it") {
		t.Errorf("a request of the held key = %v, want refused naming the holder:\n%s", err, out)
	}
	for _, k := range []string{"first", "other"} {
		if out, err := sbx("release", "sandbox.kv", "--key", k); err != nil {
			t.Errorf("release %s: %v\n%s", k, err, out)
		}
	}
}

// BenchmarkOnDemandParallelInstances times one on-demand provision and
// four of different instances at once, beside the engine alone doing the
// same (docker run of the redis image, once and four at once): on two
// busy cores the engine itself does not scale linearly, so the figure to
// read is the ratio beside the engine's.
func BenchmarkOnDemandParallelInstances(b *testing.B) {
	testenv.RequireDocker(b)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(parallelConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	sbx := func(args ...string) error {
		out, err := exec.Command("sandboxer", append([]string{"--chdir", dir}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("sandboxer %v: %v\n%s", args, err, out)
		}
		return nil
	}
	var keys []string
	b.Cleanup(func() {
		for _, k := range keys {
			if err := sbx("release", "sandbox.kv", "--key", k); err != nil {
				b.Error(err)
			}
		}
	})
	request := func(k string) error { keys = append(keys, k); return sbx("request", "sandbox.kv", "--key", k) }
	if err := request("warm"); err != nil { // the first request also creates the state
		b.Fatal(err)
	}
	var single, parallel time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if err := request(fmt.Sprintf("one-%d", i)); err != nil {
			b.Fatal(err)
		}
		single += time.Since(start)
		batch := make([]string, 4)
		for j := range batch {
			batch[j] = fmt.Sprintf("p%d-%d", i, j)
			keys = append(keys, batch[j])
		}
		start = time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for _, k := range batch {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- sbx("request", "sandbox.kv", "--key", k) }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		parallel += time.Since(start)
	}
	rawOne, rawFour := rawDockerRuns(b)
	b.ReportMetric(float64(parallel)/float64(single), "four/one")
	b.ReportMetric(float64(rawFour)/float64(rawOne), "engine-four/one")
}

// rawDockerRuns times `docker run -d` of the redis image, once and four
// at once, for comparison with sandboxer's figures.
func rawDockerRuns(t testing.TB) (one, four time.Duration) {
	label := fmt.Sprintf("dev.sandboxer.test-raw=%d", os.Getpid())
	run := func() {
		if out, err := exec.Command("docker", "run", "-d", "--rm", "--label", label, "sandboxer.local/redis:7", "redis-server", "--port", "0").CombinedOutput(); err != nil {
			t.Errorf("docker run: %v: %s", err, out)
		}
	}
	defer func() {
		ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
		if f := strings.Fields(string(ids)); len(f) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, f...)...).Run()
		}
	}()
	start := time.Now()
	run()
	one = time.Since(start)
	start = time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
	return one, time.Since(start)
}
