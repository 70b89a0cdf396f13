package state

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestMove(t *testing.T) {
	ctx := context.Background()
	s := Open(filepath.Join(t.TempDir(), "state.db"))
	member := &Record{Address: `sandbox.a["~pool-1"]`, Project: "p", Services: []string{"redis"},
		Features: map[string][]string{"redis": {}}, Generation: 1, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.Put(ctx, member); err != nil {
		t.Fatal(err)
	}
	claimed := *member
	claimed.Address, claimed.LabelAddress = `sandbox.a["job"]`, member.Address
	if err := s.Move(ctx, member.Address, &claimed); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Records) != 1 || snap.Records[`sandbox.a["job"]`] == nil || snap.Records[`sandbox.a["job"]`].LabelAddress != member.Address {
		t.Fatalf("after move: %v", snap.Records)
	}
	if err := Open(filepath.Join(t.TempDir(), "none.db")).Move(ctx, "x", &claimed); err == nil {
		t.Error("move in a state that does not exist succeeded")
	}
}
