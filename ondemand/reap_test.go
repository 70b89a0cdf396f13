package ondemand

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/sandboxer/sandboxer/state"
)

type fakeInventory struct {
	mu      sync.Mutex
	items   []Resource
	removed []string
}

func (f *fakeInventory) ListManaged(ctx context.Context, lineage string) ([]Resource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Resource(nil), f.items...), nil
}

func (f *fakeInventory) DeleteManaged(ctx context.Context, items []Resource) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range items {
		f.removed = append(f.removed, m.Name)
	}
	return nil
}

func TestReap(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, key := range []string{"short", "long", "busy"} {
		ttl := "2m"
		if key == "long" {
			ttl = "1h"
		}
		if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: key, TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	// A declared instance past its ttl, written as apply would.
	if err := e.store.Put(ctx, &state.Record{Address: "sandbox.dev", Project: "shop", Services: []string{"redis"},
		Features: map[string][]string{"redis": {}}, Generation: 3, CreatedAt: e.now, ExpiresAt: e.now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	inv := &fakeInventory{items: []Resource{
		{Kind: "container", Name: "long-g1", Address: `sandbox.agent["long"]`, Generation: 1},   // recorded: kept
		{Kind: "container", Name: "long-g0", Address: `sandbox.agent["long"]`, Generation: 0},   // older generation
		{Kind: "container", Name: "crash-g1", Address: `sandbox.agent["crash"]`, Generation: 1}, // never recorded
		{Kind: "network", Name: "crash-net", Address: `sandbox.agent["crash"]`, Generation: 1},
		{Kind: "container", Name: "busy-g2", Address: `sandbox.agent["busy"]`, Generation: 2}, // in flight
		{Kind: "container", Name: "dev-g2", Address: "sandbox.dev", Generation: 2},
	}}
	e.advance(3 * time.Minute)
	// Another command works on "busy" right now.
	unlock, err := e.store.LockInstance(ctx, `sandbox.agent["busy"]`, "request", 0)
	if err != nil {
		t.Fatal(err)
	}
	// And a plan or apply holds the state lock.
	unlockState, err := e.store.Lock(ctx, "apply", 0)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reaper{Config: e.b.Config, Store: e.store, Provider: e.prov, Inventory: inv, Events: e.ev, Now: e.clock}
	rep, err := r.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`sandbox.agent["short"]`}, rep.Expired); d != "" {
		t.Errorf("expired (-want +got):\n%s", d)
	}
	sort.Strings(inv.removed)
	if d := cmp.Diff([]string{"crash-g1", "crash-net", "long-g0"}, inv.removed); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Skip{
		{`sandbox.agent["busy"]`, "another command is working on it"},
		{"sandbox.dev", "a plan or apply holds the state lock"},
	}, rep.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}

	// Once the locks are free, the rest goes.
	unlock()
	unlockState()
	inv.removed = nil
	rep, err = r.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`sandbox.agent["busy"]`, "sandbox.dev"}, rep.Expired); d != "" {
		t.Errorf("second pass expired (-want +got):\n%s", d)
	}
	sort.Strings(inv.removed)
	// The fake inventory still lists what the first pass removed.
	if d := cmp.Diff([]string{"busy-g2", "crash-g1", "crash-net", "dev-g2", "long-g0"}, inv.removed); d != "" {
		t.Errorf("second pass removed (-want +got):\n%s", d)
	}
	snap, err := e.store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for a := range snap.Records {
		left = append(left, a)
	}
	if d := cmp.Diff([]string{`sandbox.agent["long"]`}, left); d != "" {
		t.Errorf("records left (-want +got):\n%s", d)
	}
}

func TestReapWithoutStateDoesNothing(t *testing.T) {
	e := newEnv(t)
	inv := &fakeInventory{items: []Resource{{Name: "x", Address: "sandbox.x"}}}
	r := &Reaper{Store: e.store, Provider: e.prov, Inventory: inv}
	rep, err := r.Reap(context.Background())
	if err != nil || len(inv.removed) != 0 || len(rep.Expired) != 0 {
		t.Fatalf("reap on no state: %+v %v %v", rep, inv.removed, err)
	}
}

// A record that cannot be read does not stop ttl expiry for the others
// (issue 8): reap reports it, and leaves its resources alone, since its
// record may own them.
func TestReapSkipsDamagedRecord(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, key := range []string{"short", "bad"} {
		if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: key, TTL: "2m"}); err != nil {
			t.Fatal(err)
		}
	}
	bad := `sandbox.agent["bad"]`
	db, err := bolt.Open(e.store.Path(), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("sandboxes")).Put([]byte(bad), []byte(`{"schema_version":1,"address":`))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	inv := &fakeInventory{items: []Resource{
		{Kind: "container", Name: "bad-g1", Address: bad, Generation: 1},
		{Kind: "container", Name: "gone-g1", Address: `sandbox.agent["gone"]`, Generation: 1},
	}}
	e.advance(3 * time.Minute)
	r := &Reaper{Config: e.b.Config, Store: e.store, Provider: e.prov, Inventory: inv, Events: e.ev, Now: e.clock}
	rep, err := r.Reap(ctx)
	if err != nil {
		t.Fatalf("reap: %v", err)
	}
	if d := cmp.Diff([]string{`sandbox.agent["short"]`}, rep.Expired); d != "" {
		t.Errorf("expired (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"gone-g1"}, inv.removed); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	if len(rep.Damaged) != 1 || rep.Damaged[0].Address != bad {
		t.Fatalf("damaged: %+v, want %s", rep.Damaged, bad)
	}
	if msg := rep.Damaged[0].Err.Error(); !strings.Contains(msg, "sandboxer state rm '"+bad+"'") {
		t.Errorf("damaged error %q should say how to forget the record", msg)
	}
}

// A Kubernetes record names its objects by the pod's name, which is what
// the provider lists as their IDs.
func TestReferencedIDsIncludeThePod(t *testing.T) {
	ids := referencedIDs(map[string]*state.Record{"sandbox.a": {Resources: state.Resources{
		Runtime: state.RuntimeKubernetes, Pod: "sbx-x-a-g1", Containers: map[string]string{"postgres": "postgres"}}}})
	if !ids["sbx-x-a-g1"] {
		t.Errorf("referencedIDs = %v, want the pod's name in it", ids)
	}
}
