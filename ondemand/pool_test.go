package ondemand

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/state"
)

const poolConfig = testConfig + `
sandbox "warm" {
  project   = project.cache
  on_demand = true
  ttl       = "1h"
  pool {
    size = 3
    ttl  = "2h"
  }
}
`

// fakeRotator hands out numbered passwords, never the same one twice.
type fakeRotator struct {
	n    atomic.Int64
	fail error
}

func (f *fakeRotator) Rotate(ctx context.Context, rec *state.Record) (map[string]state.Credentials, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	out := map[string]state.Credentials{}
	for svc, c := range rec.Credentials {
		c.Password = state.Secret(fmt.Sprintf("rotated-%d", f.n.Add(1)))
		out[svc] = c
	}
	return out, nil
}

func newPoolEnv(t *testing.T) (*env, *fakeRotator) {
	t.Helper()
	e := newEnvWith(t, poolConfig)
	rot := &fakeRotator{}
	e.b.Rotator = rot
	return e, rot
}

func TestPoolFillClaimRefill(t *testing.T) {
	e, _ := newPoolEnv(t)
	ctx := context.Background()
	st, err := e.b.FillPool(ctx, "sandbox.warm")
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != 3 || st.Ready != 3 || st.Filled != 3 || len(st.Members) != 3 {
		t.Fatalf("after fill: %+v", st)
	}
	for _, m := range st.Members {
		if !strings.HasPrefix(m, `sandbox.warm["~pool-`) {
			t.Errorf("member at %s, not a reserved key", m)
		}
	}
	// A member's ttl is the pool's.
	m0, _ := e.store.Get(ctx, st.Members[0])
	if got := m0.ExpiresAt.Sub(e.now); got != 2*time.Hour {
		t.Errorf("member ttl %s, want 2h", got)
	}
	var claimed atomic.Value
	e.b.OnClaim = func(block string) { claimed.Store(block) }
	creates := e.prov.creates
	res, err := e.b.Request(ctx, Request{Address: "sandbox.warm", Key: "job1"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.FromPool || res.Reused {
		t.Errorf("from_pool %v reused %v, want a pool claim", res.FromPool, res.Reused)
	}
	if e.prov.creates != creates {
		t.Errorf("a claim created %d instances", e.prov.creates-creates)
	}
	if claimed.Load() != "warm" {
		t.Errorf("OnClaim heard %v", claimed.Load())
	}
	rec, _ := e.store.Get(ctx, `sandbox.warm["job1"]`)
	if rec == nil || !strings.HasPrefix(rec.LabelAddress, `sandbox.warm["~pool-`) || !rec.OnDemand {
		t.Fatalf("claimed record %+v", rec)
	}
	if got := rec.ExpiresAt.Sub(e.now); got != time.Hour {
		t.Errorf("claimed ttl %s, want the block's 1h", got)
	}
	if pw := rec.Credentials["redis"].Password.Reveal(); !strings.HasPrefix(pw, "rotated-") {
		t.Errorf("claimed credentials were not rotated")
	}
	if old, _ := e.store.Get(ctx, rec.LabelAddress); old != nil {
		t.Errorf("the member's record is still at %s", rec.LabelAddress)
	}
	// The claimed instance probes alive and is reused as any instance.
	again, err := e.b.Request(ctx, Request{Address: "sandbox.warm", Key: "job1"})
	if err != nil || !again.Reused || again.FromPool {
		t.Fatalf("second request: %+v, %v", again, err)
	}
	if st, _ := e.b.PoolStatus(ctx, "sandbox.warm"); st.Ready != 2 {
		t.Errorf("ready %d after a claim, want 2", st.Ready)
	}
	st, err = e.b.FillPool(ctx, `sandbox.warm`)
	if err != nil || st.Ready != 3 || st.Filled != 1 {
		t.Fatalf("refill: %+v, %v", st, err)
	}
	wantTypes := map[string]int{"pool_filled": 4, "pool_claimed": 1}
	got := map[string]int{}
	for _, ev := range e.ev.ev {
		got[string(ev.Event)]++
	}
	for typ, n := range wantTypes {
		if got[typ] != n {
			t.Errorf("%d %s events, want %d", got[typ], typ, n)
		}
	}
	// Release of a claimed instance deletes the member's resources.
	if ok, err := e.b.Release(ctx, "sandbox.warm", "job1"); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if e.prov.live[rec.LabelAddress+"#1"] {
		t.Errorf("released claimed member still live")
	}
	st, err = e.b.DrainPool(ctx, "sandbox.warm")
	if err != nil || st.Ready != 0 || st.Drained != 3 {
		t.Fatalf("drain: %+v, %v", st, err)
	}
	if len(e.prov.live) != 0 {
		t.Errorf("left live after drain: %v", e.prov.live)
	}
}

func TestPoolNotClaimed(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		prep func(e *env, rot *fakeRotator)
	}{
		{"feature superset", Request{Address: "sandbox.warm", Key: "k", Extensions: map[string][]string{"redis": {"json"}}}, nil},
		{"empty pool", Request{Address: "sandbox.warm", Key: "k"}, func(e *env, _ *fakeRotator) {
			if _, err := e.b.DrainPool(context.Background(), "sandbox.warm"); err != nil {
				panic(err)
			}
		}},
		{"expired members", Request{Address: "sandbox.warm", Key: "k"}, func(e *env, _ *fakeRotator) { e.advance(3 * time.Hour) }},
		{"rotation fails", Request{Address: "sandbox.warm", Key: "k"}, func(e *env, rot *fakeRotator) { rot.fail = fmt.Errorf("boom") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, rot := newPoolEnv(t)
			ctx := context.Background()
			if _, err := e.b.FillPool(ctx, "sandbox.warm"); err != nil {
				t.Fatal(err)
			}
			if tc.prep != nil {
				tc.prep(e, rot)
			}
			res, err := e.b.Request(ctx, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if res.FromPool {
				t.Errorf("claimed from the pool")
			}
			rec, _ := e.store.Get(ctx, `sandbox.warm["k"]`)
			if rec == nil || rec.LabelAddress != "" {
				t.Errorf("cold record %+v", rec)
			}
		})
	}
}

// Concurrent claims never share a member: with a pool of 3 and 12
// callers, exactly 3 are served from the pool, each by a different
// member, and the other 9 provision cold.
func TestPoolConcurrentClaimsUnique(t *testing.T) {
	e, _ := newPoolEnv(t)
	ctx := context.Background()
	st, err := e.b.FillPool(ctx, "sandbox.warm")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	fromPool := map[string]string{} // member → caller
	cold := 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("c%d", i)
			res, err := e.b.Request(ctx, Request{Address: "sandbox.warm", Key: key})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if !res.FromPool {
				cold++
				return
			}
			if prev, dup := fromPool[res.Record.LabelAddress]; dup {
				t.Errorf("member %s handed to %s and %s", res.Record.LabelAddress, prev, key)
			}
			fromPool[res.Record.LabelAddress] = key
		}()
	}
	wg.Wait()
	if len(fromPool) != 3 || cold != 9 {
		t.Errorf("%d from the pool, %d cold; want 3 and 9", len(fromPool), cold)
	}
	members := map[string]string{}
	for m := range fromPool {
		members[m] = m
	}
	want := map[string]string{}
	for _, m := range st.Members {
		want[m] = m
	}
	if d := cmp.Diff(want, members); d != "" {
		t.Errorf("claimed members (-filled +claimed):\n%s", d)
	}
}

func TestPoolRefusals(t *testing.T) {
	e, _ := newPoolEnv(t)
	ctx := context.Background()
	for addr, want := range map[string]string{
		"sandbox.kv":    "has no pool block",
		"sandbox.dev":   "not an on-demand block",
		"sandbox.nope":  "no sandbox block",
		"sandbox.warm[": "unterminated",
	} {
		if _, err := e.b.FillPool(ctx, addr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("fill %s: %v, want %q", addr, err, want)
		}
	}
	// A user cannot name a member's key.
	if _, err := e.b.Request(ctx, Request{Address: "sandbox.warm", Key: "~pool-1"}); err == nil || !strings.Contains(err.Error(), "invalid key") {
		t.Errorf("request of a reserved key: %v", err)
	}
}

// Reap leaves a claimed member's resources alone (its labels name the pool
// address, which has no record any more, but the claimant's record names
// their ids) and sweeps a member's leftovers nobody records.
func TestReapKeepsClaimedMembers(t *testing.T) {
	e, _ := newPoolEnv(t)
	ctx := context.Background()
	if _, err := e.b.FillPool(ctx, "sandbox.warm"); err != nil {
		t.Fatal(err)
	}
	res, err := e.b.Request(ctx, Request{Address: "sandbox.warm", Key: "job"})
	if err != nil || !res.FromPool {
		t.Fatalf("claim: %v %v", res, err)
	}
	member := res.Record.LabelAddress
	claimedNet := res.Record.Resources.Network
	inv := &fakeInventory{items: []Resource{
		// The claimed member's container, labelled with the pool address.
		{Kind: "container", ID: claimedNet, Name: "claimed", Address: member, Generation: 1},
		// A member whose record is gone (a drain that lost the engine).
		{Kind: "container", ID: "gone-id", Name: "drained", Address: `sandbox.warm["~pool-00"]`, Generation: 1},
	}}
	r := &Reaper{Config: e.b.Config, Store: e.store, Provider: e.prov, Inventory: inv, Events: e.ev, Now: e.clock}
	rep, err := r.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"drained"}, inv.removed); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	if len(rep.Expired) != 0 {
		t.Errorf("expired %v", rep.Expired)
	}
	// Past the claimant's ttl it expires like any instance, through the
	// member's labels.
	e.advance(61 * time.Minute)
	rep, err = r.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`sandbox.warm["job"]`}, rep.Expired); d != "" {
		t.Errorf("expired (-want +got):\n%s", d)
	}
	if e.prov.live[member+"#1"] {
		t.Error("the expired claimed instance is still live")
	}
}
