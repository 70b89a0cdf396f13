package providertest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sandboxer/sandboxer/apply"
)

// The capabilities (apply/capabilities.go) a provider has are held to the
// same contract whichever provider it is. A provider without one skips
// its test, saying so: what it lacks is then missing everywhere the
// capability is used (orphan sweeps, network checks), by design.

// testInventory: what an instance made is listed under its lineage with
// its address and generation, DeleteManaged removes it, and the listing is
// then empty; deleting again succeeds.
func testInventory(t *testing.T, s *suite) {
	inv, ok := apply.As[apply.Inventory](s.Provider)
	if !ok {
		t.Skip("no apply.Inventory")
	}
	ctx := s.ctx(t)
	s.create(t, "sandbox.inventory", 3)
	items, err := inv.ListManaged(ctx, s.Lineage)
	if err != nil {
		t.Fatalf("ListManaged: %v", err)
	}
	var containers int
	for _, it := range items {
		if it.Lineage != s.Lineage {
			t.Errorf("listed %s %s of lineage %q, want only %q", it.Kind, it.Name, it.Lineage, s.Lineage)
		}
		if it.Kind == apply.KindContainer {
			containers++
			if it.Address != "sandbox.inventory" || it.Generation != 3 {
				t.Errorf("container %s labelled %s#%d, want sandbox.inventory#3", it.Name, it.Address, it.Generation)
			}
		}
	}
	if containers != len(s.Features.Services()) {
		t.Errorf("%d containers listed, want one per service (%d): %v", containers, len(s.Features.Services()), items)
	}
	if others, err := inv.ListManaged(ctx, randomHex()); err != nil || len(others) != 0 {
		t.Errorf("ListManaged of another lineage = %v, %v; want nothing", others, err)
	}
	if err := inv.DeleteManaged(ctx, items); err != nil {
		t.Fatalf("DeleteManaged: %v", err)
	}
	left, err := inv.ListManaged(ctx, s.Lineage)
	if err != nil {
		t.Fatalf("ListManaged after delete: %v", err)
	}
	if len(left) != 0 {
		t.Errorf("left after DeleteManaged: %v", left)
	}
	if err := inv.DeleteManaged(ctx, items); err != nil {
		t.Errorf("DeleteManaged of what is gone: %v", err)
	}
}

// testPinger: a connected runtime answers its ping; a cancelled one
// fails.
func testPinger(t *testing.T, s *suite) {
	pg, ok := apply.As[apply.Pinger](s.Provider)
	if !ok {
		t.Skip("no apply.Pinger")
	}
	if err := pg.Ping(s.ctx(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	ctx, cancel := context.WithCancel(s.ctx(t))
	cancel()
	if err := pg.Ping(ctx); err == nil {
		t.Error("Ping with a cancelled context succeeded")
	}
}

// testNetworkChecker: a network nobody made is missing, and only it.
func testNetworkChecker(t *testing.T, s *suite) {
	nc, ok := apply.As[apply.NetworkChecker](s.Provider)
	if !ok {
		t.Skip("no apply.NetworkChecker")
	}
	ctx := s.ctx(t)
	a, b := fmt.Sprintf("sbx-conformance-%s", randomHex()[:12]), fmt.Sprintf("sbx-conformance-%s", randomHex()[:12])
	missing, err := nc.MissingNetworks(ctx, []string{a, b})
	if err != nil {
		t.Fatalf("MissingNetworks: %v", err)
	}
	slices.Sort(missing)
	want := []string{a, b}
	slices.Sort(want)
	if !slices.Equal(missing, want) {
		t.Errorf("MissingNetworks = %v, want %v", missing, want)
	}
	if none, err := nc.MissingNetworks(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("MissingNetworks(nil) = %v, %v", none, err)
	}
}
