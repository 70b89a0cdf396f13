package statetest

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/state"
)

// lease is a lease of holder on addr expiring at exp (whole
// microseconds: what every backend keeps of a time).
func lease(addr, holder string, exp time.Time, release bool) state.Lease {
	return state.Lease{Address: addr, Holder: holder, Host: state.Hostname(), PID: os.Getpid(), Expires: exp.UTC().Truncate(time.Microsecond), Release: release}
}

func heldBy(t *testing.T, b state.Backend, addr string) []state.Lease {
	t.Helper()
	ls, err := b.HeldBy(ctx(t), addr)
	must(t, err)
	for i := range ls {
		ls[i].Expires = ls[i].Expires.UTC()
	}
	return ls
}

// testLeases: leases are kept per address and holder, renewed in place,
// seen by another value, dropped one by one, and never move the serial.
func testLeases(t *testing.T, st State) {
	b := st.Open(t, nil)
	if got := heldBy(t, b, "sandbox.app[0]"); len(got) != 0 {
		t.Fatalf("leases of an empty state: %v", got)
	}
	must(t, b.Unhold(ctx(t), "sandbox.app[0]", "nobody")) // absent: no error
	if err := b.Hold(ctx(t), state.Lease{Address: "sandbox.app[0]"}); err == nil {
		t.Error("a lease without a holder was accepted")
	}

	exp := time.Now().Add(time.Minute)
	a1 := lease("sandbox.app[0]", "s1", exp, true)
	a2 := lease("sandbox.app[0]", "s2", exp, false)
	b1 := lease("sandbox.app[1]", "s1", exp, true)
	for _, l := range []state.Lease{a2, b1, a1} {
		must(t, b.Hold(ctx(t), l))
	}
	must(t, b.Put(ctx(t), Record(0, "lease")))
	before := snapshot(t, b).Serial

	other := st.Open(t, nil)
	if diff := cmp.Diff([]state.Lease{a1, a2}, heldBy(t, other, "sandbox.app[0]")); diff != "" {
		t.Errorf("leases of sandbox.app[0] seen by another value (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]state.Lease{a1, a2, b1}, heldBy(t, other, "")); diff != "" {
		t.Errorf("every lease (-want +got):\n%s", diff)
	}

	// A heartbeat renews in place.
	a1.Expires = exp.Add(time.Hour).UTC().Truncate(time.Microsecond)
	must(t, other.Hold(ctx(t), a1))
	if diff := cmp.Diff([]state.Lease{a1, a2}, heldBy(t, b, "sandbox.app[0]")); diff != "" {
		t.Errorf("after renewal (-want +got):\n%s", diff)
	}

	must(t, b.Unhold(ctx(t), "sandbox.app[0]", "s1"))
	if diff := cmp.Diff([]state.Lease{a2}, heldBy(t, other, "sandbox.app[0]")); diff != "" {
		t.Errorf("after s1 left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]state.Lease{b1}, heldBy(t, other, "sandbox.app[1]")); diff != "" {
		t.Errorf("s1 leaving sandbox.app[0] touched sandbox.app[1] (-want +got):\n%s", diff)
	}
	if after := snapshot(t, other).Serial; after != before {
		t.Errorf("leases moved the serial: %d → %d", before, after)
	}
	if got := snapshot(t, other).Records; len(got) != 1 {
		t.Errorf("leases show up as records: %d records", len(got))
	}
}

// testLeasesConcurrent: holders in separate values (as separate
// processes) hold and leave at once; nothing is lost.
func testLeasesConcurrent(t *testing.T, st State) {
	const n = 8
	exp := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, n*4)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := st.Open(t, nil)
			for j := range 3 {
				if err := b.Hold(ctx(t), lease("sandbox.app[0]", fmt.Sprintf("h%d-%d", i, j), exp, true)); err != nil {
					errs <- err
				}
			}
			if err := b.Unhold(ctx(t), "sandbox.app[0]", fmt.Sprintf("h%d-1", i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := heldBy(t, st.Open(t, nil), "sandbox.app[0]")
	if len(got) != 2*n {
		t.Fatalf("%d leases after %d holders each held 3 and dropped 1, want %d", len(got), n, 2*n)
	}
	for _, l := range got {
		if l.Holder[len(l.Holder)-2:] == "-1" {
			t.Errorf("dropped lease %s still there", l.Holder)
		}
	}
}
