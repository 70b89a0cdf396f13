package apply_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// lkProvider records the generations it was asked to delete.
type lkProvider struct {
	mu      sync.Mutex
	deleted []int
}

func (p *lkProvider) Check(context.Context, []plan.ImageUse) (plan.Capabilities, error) {
	return nil, nil
}
func (p *lkProvider) Create(context.Context, apply.CreateRequest) (*apply.Created, error) {
	return &apply.Created{}, nil
}
func (p *lkProvider) Probe(context.Context, *state.Record) error { return nil }
func (p *lkProvider) Delete(_ context.Context, rec *state.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted = append(p.deleted, rec.Generation)
	return nil
}

// TestExecutorWaitsForTheInstanceLock: while a request holds an
// instance's lock (across its provision), apply's change to that instance
// waits, and then works from the record as the request left it.
func TestExecutorWaitsForTheInstanceLock(t *testing.T) {
	ctx := context.Background()
	store := state.Open(t.TempDir() + "/state.db")
	a := config.Address{Name: "agent", Key: "k", HasKey: true}
	rec := &state.Record{Address: a.String(), Project: "p", OnDemand: true, Services: []string{"redis"},
		Features: map[string][]string{"redis": {}}, Generation: 1, CreatedAt: time.Unix(0, 0).UTC(),
		ExpiresAt: time.Unix(1, 0).UTC()}
	if err := store.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	unlock, err := store.LockInstance(ctx, a.String(), "request", 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &lkProvider{}
	e := &apply.Executor{Provider: p, Store: store, Lineage: "lineage", Parallelism: 1}
	// The plan saw generation 1 expired and deletes it.
	ch := &plan.Change{Addr: a, Project: "p", Action: plan.Delete, Reason: plan.ReasonExpired, PriorGeneration: 1}
	done := make(chan error, 1)
	go func() {
		_, err := e.Apply(ctx, nil, &plan.Plan{Changes: []*plan.Change{ch}})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("apply changed an instance whose lock another command holds (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	// Meanwhile the request re-provisioned it as generation 2.
	rec.Generation = 2
	rec.ExpiresAt = time.Now().Add(time.Hour).UTC()
	if err := store.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		// Whether apply refuses the stale delete or not, it must have read
		// the record after the request let go: never act on generation 1.
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, g := range p.deleted {
			if g != 2 {
				t.Errorf("apply deleted generation %d from a stale read (err %v)", g, err)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("apply did not go on after the lock was released")
	}
}
