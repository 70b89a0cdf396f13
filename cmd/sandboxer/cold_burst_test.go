package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// A burst of cold requests for different keys, from separate processes,
// while the test keeps every core busy: all succeed (the readiness
// timeout grows with the load instead of failing the slowest at a fixed
// minute as internal).
func TestColdBurstUnderLoad(t *testing.T) {
	testenv.RequireDocker(t)
	const n = 6
	dir := t.TempDir()
	writeConfig(t, dir, mcpConfig)
	cleanupLineage(t, dir)

	defer loadCores()()

	start := time.Now()
	var wg sync.WaitGroup
	outs := make([]string, n)
	errs := make([]error, n)
	took := make([]time.Duration, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			out, err := sandboxerCmd(t, dir, "request", "sandbox.agent", "--key", fmt.Sprintf("cold%d", i), "--json").CombinedOutput()
			outs[i], errs[i], took[i] = string(out), err, time.Since(t0)
		}()
	}
	wg.Wait()
	ok := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("request %d failed after %s: %v\n%s", i, took[i].Round(time.Millisecond), errs[i], outs[i])
			continue
		}
		ok++
	}
	t.Logf("%d of %d cold requests succeeded on %d loaded cores in %s (each: %v)", ok, n, runtime.NumCPU(), time.Since(start).Round(time.Millisecond), took)
	if _, addrs := stateOf(t, dir); len(addrs) != ok {
		t.Errorf("state holds %v, want %d instances", addrs, ok)
	}
}

// loadCores keeps every core busy until the returned stop is called.
func loadCores() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var burners sync.WaitGroup
	for range runtime.NumCPU() {
		burners.Add(1)
		go func() {
			defer burners.Done()
			x := 1
			for ctx.Err() == nil {
				for i := range 1_000_000 {
					x = x*31 + i
				}
			}
			_ = x
		}()
	}
	return func() { cancel(); burners.Wait() }
}
