package kubernetes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/rotate"
	"github.com/sandboxer/sandboxer/state"
)

// A warm pool on the real cluster, through the broker the library runs:
// a claim binds fresh credentials over the services' own protocols
// (package rotate) and moves the record in the state, and makes no
// request to the API server at all, so none that writes (counted by the
// client's own transport). The claimed credentials work and the
// member's are gone. SANDBOXER_KUBE_CLAIMS=N also times N claims with
// refills running (a FillPool loop beside them, as serve keeps a pool
// full) and logs p50/p99.
func TestPoolClaimMakesNoAPIRequests(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	const size = 4
	ctx := ctxFor(t, 10*time.Minute)
	b, store := poolBroker(t, p, size)
	st, err := b.FillPool(ctx, "sandbox.warm")
	mustf(t, err, "FillPool")
	snap, err := store.Inspect(ctx)
	mustf(t, err, "Inspect")
	cleanupLineage(t, p, snap.Lineage)
	t.Cleanup(func() {
		if _, err := b.DrainPool(context.Background(), "sandbox.warm"); err != nil {
			t.Errorf("DrainPool: %v", err)
		}
	})
	if st.Ready != size {
		t.Fatalf("pool after fill: %+v", st)
	}
	before, beforeW := p.requests.Load(), p.writes.Load()
	for i := range size {
		key := fmt.Sprintf("job%d", i)
		res, err := b.Request(ctx, ondemand.Request{Address: "sandbox.warm", Key: key})
		mustf(t, err, "claim %s", key)
		if !res.FromPool {
			t.Fatalf("request %s was not a pool claim", key)
		}
	}
	reqs, writes := p.requests.Load()-before, p.writes.Load()-beforeW
	t.Logf("%d claims: %d API requests, %d writes", size, reqs, writes)
	if writes != 0 || reqs != 0 {
		t.Errorf("%d claims made %d API requests, %d writes; want none", size, reqs, writes)
	}
	// The claimed credentials answer; the record moved to the claimant.
	rec, err := store.Get(ctx, `sandbox.warm["job0"]`)
	mustf(t, err, "Get")
	if rec == nil || rec.LabelAddress == "" {
		t.Fatalf("claimed record %+v", rec)
	}
	mustf(t, p.Probe(ctx, rec), "Probe of the claimed instance with its new credentials")
	for i := range size {
		_, err := b.Release(ctx, "sandbox.warm", fmt.Sprintf("job%d", i))
		mustf(t, err, "Release")
	}

	n, _ := strconv.Atoi(os.Getenv("SANDBOXER_KUBE_CLAIMS"))
	if n <= 0 {
		return
	}
	// Refills running: a loop tops the pool up as serve does after each
	// claim; a claim waits (outside its timing) for a ready member, so
	// every sample is a claim.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	refilled := make(chan struct{})
	go func() {
		defer close(refilled)
		for rctx.Err() == nil {
			if _, err := b.FillPool(rctx, "sandbox.warm"); err != nil && rctx.Err() == nil {
				t.Errorf("refill: %v", err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var lat []time.Duration
	for i := range n {
		for {
			s, err := b.PoolStatus(ctx, "sandbox.warm")
			mustf(t, err, "PoolStatus")
			if s.Ready > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		key := fmt.Sprintf("lat%d", i)
		start := time.Now()
		res, err := b.Request(ctx, ondemand.Request{Address: "sandbox.warm", Key: key})
		d := time.Since(start)
		mustf(t, err, "claim %s", key)
		if res.FromPool {
			lat = append(lat, d)
		}
		_, err = b.Release(ctx, "sandbox.warm", key)
		mustf(t, err, "Release")
	}
	stop()
	<-refilled
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		t.Fatal("no request was a claim")
	}
	pct := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	t.Logf("%d claims of %d requests (refills running): p50 %s, p99 %s, max %s",
		len(lat), n, pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
}

// poolBroker is the broker the library runs, on p, with a redis pool of
// size in a state of its own.
func poolBroker(t *testing.T, p *Provider, size int) (*ondemand.Broker, *state.Store) {
	t.Helper()
	src := fmt.Sprintf(`
provider "kubernetes" {
  kubeconfig = %q
  namespace  = %q
  image "redis" { ref = %q }
}
project "p" { services = ["redis"] }
sandbox "warm" {
  project   = project.p
  on_demand = true
  ttl       = "1h"
  pool {
    size = %d
  }
}
`, testenv.Kubeconfig(t), p.ns, testRedisImage(), size)
	cat := config.DefaultCatalog()
	cfg, diags := config.LoadSources(t.TempDir(), map[string][]byte{"main.sbx.hcl": []byte(src)}, config.Input{}, cat)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	store := state.Open(filepath.Join(t.TempDir(), "state.db"))
	return &ondemand.Broker{Config: cfg, Catalog: cat, Store: store, Provider: p, Rotator: rotate.Network{}}, store
}
