package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/state"
)

// probeOnly answers Probe from a table; refresh needs nothing else.
type probeOnly struct {
	Provider
	errs map[string]error
}

func (p probeOnly) Probe(_ context.Context, rec *state.Record) error { return p.errs[rec.Address] }

func TestRefreshClassifies(t *testing.T) {
	snap := &state.Snapshot{Records: map[string]*state.Record{
		"sandbox.alive": {Address: "sandbox.alive"},
		"sandbox.gone":  {Address: "sandbox.gone"},
		"sandbox.mute":  {Address: "sandbox.mute"},
	}}
	p := probeOnly{errs: map[string]error{
		"sandbox.gone": fmt.Errorf("container abc: %w", ErrNotFound),
		"sandbox.mute": errors.New("postgres: password authentication failed"),
	}}
	obs, err := Refresh(context.Background(), p, snap, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !obs["sandbox.alive"].Alive || obs["sandbox.gone"].Alive || obs["sandbox.mute"].Alive {
		t.Errorf("observations: %+v", obs)
	}
	if obs["sandbox.gone"].Detail != "its containers are gone" {
		t.Errorf("gone detail = %q", obs["sandbox.gone"].Detail)
	}
}

// An engine that cannot be reached must fail the refresh: calling every
// instance dead would rotate credentials that are still in use.
func TestRefreshFailsWhenEngineUnreachable(t *testing.T) {
	snap := &state.Snapshot{Records: map[string]*state.Record{
		"sandbox.a": {Address: "sandbox.a"}, "sandbox.b": {Address: "sandbox.b"}}}
	p := probeOnly{errs: map[string]error{
		"sandbox.a": fmt.Errorf("docker provider: %w at unix:///x.sock", ErrEngine),
	}}
	_, err := Refresh(context.Background(), p, snap, 2)
	if !errors.Is(err, ErrEngine) || !strings.Contains(err.Error(), "cannot reach the Docker engine") {
		t.Fatalf("Refresh error = %v, want one wrapping ErrEngine", err)
	}
}
