package ondemand

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// Two janitors on one state (two replicas, each with its own handle on
// the state file): one leads and reaps, the other follows and does not;
// when the leader stops, its lock is released and the follower takes over
// within an interval.
func TestJanitorOneLeaderTakesOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := context.Background()
	type replica struct {
		roles  chan JanitorRole
		passes atomic.Int32
		stop   func()
	}
	start := func() *replica {
		r := &replica{roles: make(chan JanitorRole, 16)}
		store := state.Open(path)
		reaper := &Reaper{Store: store, Provider: newFake()}
		interrupt := make(chan struct{})
		done := make(chan struct{})
		j := &Janitor{Store: store, Every: 10 * time.Millisecond, Pass: reaper.Reap, Interrupt: interrupt,
			OnPass: func(_ *ReapReport, err error) {
				if err != nil {
					t.Errorf("reap: %v", err)
				}
				r.passes.Add(1)
			},
			OnRole: func(role JanitorRole) { r.roles <- role }}
		go func() { defer close(done); j.Run(ctx) }()
		r.stop = func() { close(interrupt); <-done }
		return r
	}
	next := func(r *replica) JanitorRole {
		t.Helper()
		select {
		case role := <-r.roles:
			if role.Err != nil {
				t.Fatalf("janitor lock: %v", role.Err)
			}
			return role
		case <-time.After(10 * time.Second):
			t.Fatal("no janitor role reported within 10s")
			return JanitorRole{}
		}
	}
	a := start()
	if role := next(a); !role.Leads {
		t.Fatalf("first janitor follows %+v; want it to lead", role.Holder)
	}
	b := start()
	defer b.stop()
	if role := next(b); role.Leads {
		t.Fatal("both janitors lead")
	}
	time.Sleep(50 * time.Millisecond) // a few intervals: the follower reaps nothing
	if n := b.passes.Load(); n != 0 {
		t.Fatalf("the follower made %d passes", n)
	}
	a.stop()
	if a.passes.Load() == 0 {
		t.Error("the leader made no pass")
	}
	if role := next(b); !role.Leads {
		t.Fatalf("after the leader stopped, the other still follows %+v", role.Holder)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.passes.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the new leader made no pass within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
