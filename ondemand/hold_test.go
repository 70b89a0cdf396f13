package ondemand

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// The last-one-out rule on the broker: an instance is released only by
// its last live holder; a holder whose lease expired no longer counts;
// the reaper releases what only dead release-on-end holders held.
func TestReleaseUnheld(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	addr := `sandbox.agent["shared"]`
	for _, h := range []string{"a", "b", "c"} {
		if err := e.b.Hold(ctx, "sandbox.agent", "shared", Holder{ID: h, Release: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "shared"}); err != nil {
			t.Fatal(err)
		}
	}
	released, held, err := e.b.ReleaseUnheld(ctx, "sandbox.agent", "shared", "a")
	if err != nil || released || held != 2 {
		t.Fatalf("a leaves: released=%v held=%d err=%v, want kept for 2 holders", released, held, err)
	}
	// b's lease runs out (its process on another machine died): c alone
	// holds it now.
	if err := e.b.Hold(ctx, "sandbox.agent", "shared", Holder{ID: "c", Release: true, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	e.advance(DefaultLeaseTTL + time.Second)
	released, held, err = e.b.ReleaseUnheld(ctx, "sandbox.agent", "shared", "c")
	if err != nil || !released || held != 0 {
		t.Fatalf("c leaves last: released=%v held=%d err=%v, want released", released, held, err)
	}
	if rec, _ := e.store.Get(ctx, addr); rec != nil {
		t.Error("the record is still there")
	}
	if ls, _ := e.store.HeldBy(ctx, addr); len(ls) != 0 {
		t.Errorf("leases left: %v", ls)
	}
}

func TestReapUnheld(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, key := range []string{"orphaned", "kept", "plain"} {
		if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: key, TTL: "1h"}); err != nil {
			t.Fatal(err)
		}
	}
	host, pid := state.Hostname(), os.Getpid()
	exp := e.now.Add(time.Minute)
	for _, l := range []state.Lease{
		// Dead (expired) and to release at its end: the server was killed.
		{Address: `sandbox.agent["orphaned"]`, Holder: "dead", Host: host, PID: pid, Expires: e.now.Add(-time.Second), Release: true},
		// A dead release-on-end holder, but a live one too: kept.
		{Address: `sandbox.agent["kept"]`, Holder: "dead", Host: host, PID: pid, Expires: e.now.Add(-time.Second), Release: true},
		{Address: `sandbox.agent["kept"]`, Holder: "live", Host: host, PID: pid, Expires: exp},
		// Dead, without release-on-end: left to its ttl.
		{Address: `sandbox.agent["plain"]`, Holder: "dead", Host: host, PID: pid, Expires: e.now.Add(-time.Second)},
	} {
		if err := e.store.Hold(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reaper{Config: e.b.Config, Store: e.store, Provider: e.prov, Now: e.clock}
	rep, err := r.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unheld) != 1 || rep.Unheld[0] != `sandbox.agent["orphaned"]` {
		t.Errorf("unheld = %v, want only the orphaned one", rep.Unheld)
	}
	snap, err := e.store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Records[`sandbox.agent["orphaned"]`]; ok || len(snap.Records) != 2 {
		t.Errorf("records after reap: %v", snap.Records)
	}
	ls, err := e.store.HeldBy(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Holder != "live" {
		t.Errorf("leases after reap: %v, want only the live one", ls)
	}
}
