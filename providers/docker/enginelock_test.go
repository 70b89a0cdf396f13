package docker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/sandboxer/sandboxer/config"
)

// providers returns n providers of their own, as n processes would have:
// no singleflight or cache is shared between them.
func providers(t *testing.T, n int) []*Provider {
	t.Helper()
	requireImages(t)
	ps := make([]*Provider, n)
	for i := range ps {
		p, err := New(context.Background(), testConfig(), config.DefaultCatalog())
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		ps[i] = p
	}
	return ps
}

func TestEngineLockExcludes(t *testing.T) {
	t.Parallel()
	ps := providers(t, 8)
	lineage := newLineage(t, ps[0])
	ctx := context.Background()
	var holders, most, taken atomic.Int32
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				unlock, err := p.lockLineage(ctx, lineage, "test")
				if err != nil {
					t.Error(err)
					return
				}
				n := holders.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				taken.Add(1)
				time.Sleep(5 * time.Millisecond)
				holders.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 || taken.Load() != 24 {
		t.Errorf("lock taken %d times with at most %d holders at once, want 24 and 1", taken.Load(), most.Load())
	}
	assertNothingLabelled(t, ps[0], lineage)
}

// A holder that died leaves its volume; a waiter takes the lock over once
// it has seen that holder for lockStale, and sweeps leave a young lock be.
func TestEngineLockLeftByDeadHolder(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := context.Background()
	name := lineageLockName(lineage, "test")
	if _, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: map[string]string{
		LabelManaged: "true", LabelLineage: lineage, LabelLock: "test", labelLockToken: "dead-holder",
	}}); err != nil {
		t.Fatal(err)
	}
	left, err := p.ListManaged(ctx, lineage)
	if err != nil || len(left) != 0 {
		t.Errorf("ListManaged listed a lock a live holder may have: %v %v", left, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := p.lockLineage(wctx, lineage, "test"); err == nil {
		t.Fatal("took a lock another holder has")
	}
	p.lockStaleAfter = 200 * time.Millisecond
	unlock, err := p.lockLineage(ctx, lineage, "test")
	if err != nil {
		t.Fatalf("a waiter did not take over a dead holder's lock: %v", err)
	}
	unlock()
	assertNothingLabelled(t, p, lineage)
	if !lockMayBeHeld(map[string]string{LabelLock: "x"}, time.Now().Add(-time.Second).Format(time.RFC3339Nano), time.Now()) ||
		lockMayBeHeld(map[string]string{LabelLock: "x"}, time.Now().Add(-lockStale-time.Second).Format(time.RFC3339Nano), time.Now()) ||
		lockMayBeHeld(map[string]string{}, time.Now().Format(time.RFC3339Nano), time.Now()) {
		t.Error("lockMayBeHeld: a young lock must be spared, an old one or a plain volume not")
	}
}

// Processes that find no network at the same moment make exactly one.
func TestEnsureNetworkConcurrentProcesses(t *testing.T) {
	t.Parallel()
	ps := providers(t, 10)
	lineage := newLineage(t, ps[0])
	ctx := context.Background()
	ids := make([]string, len(ps))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			id, err := p.ensureNetwork(ctx, lineage)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	close(start)
	wg.Wait()
	nets, err := ps[0].lineageNetworks(ctx, lineage)
	if err != nil {
		t.Fatal(err)
	}
	if len(nets) != 1 {
		t.Fatalf("%d networks for one lineage, want 1", len(nets))
	}
	for i, id := range ids {
		if id != nets[0] {
			t.Errorf("process %d uses network %q, want %q", i, id, nets[0])
		}
	}
}

// Waiters that see one dead holder at once take its lock over one at a
// time: never two holders.
func TestEngineLockTakeOverByManyWaiters(t *testing.T) {
	t.Parallel()
	ps := providers(t, 6)
	lineage := newLineage(t, ps[0])
	ctx := context.Background()
	if _, err := ps[0].cli.VolumeCreate(ctx, volume.CreateOptions{Name: lineageLockName(lineage, "test"), Labels: map[string]string{
		LabelManaged: "true", LabelLineage: lineage, LabelLock: "test", labelLockToken: "dead-holder",
	}}); err != nil {
		t.Fatal(err)
	}
	var holders, most atomic.Int32
	var wg sync.WaitGroup
	for _, p := range ps {
		p.lockStaleAfter = 150 * time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := p.lockLineage(ctx, lineage, "test")
			if err != nil {
				t.Error(err)
				return
			}
			n := holders.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(20 * time.Millisecond)
			holders.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders at once after a takeover, want 1", most.Load())
	}
	// ListManaged spares young locks: look at the volumes themselves.
	vs, err := ps[0].cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelLineage+"="+lineage))})
	if err != nil || len(vs.Volumes) != 0 {
		t.Errorf("volumes left (locks or gates): %d, %v", len(vs.Volumes), err)
	}
}
