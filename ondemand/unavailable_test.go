package ondemand

import (
	"context"
	"errors"
	"testing"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/plan"
)

// A request for a feature the image cannot provide is refused before
// anything is created, as plan refuses it for apply.
func TestRequestUnavailableFeature(t *testing.T) {
	e := newEnv(t)
	e.prov.caps = plan.Capabilities{
		// The configuration names no image: the plan picks redis:8.
		{Service: "redis", Ref: "redis:8"}: {Image: "redis:8", Features: map[string]string{"search": "1.2.0"}},
	}
	_, err := e.b.Request(context.Background(), Request{Address: "sandbox.agent", Key: "k",
		Extensions: map[string][]string{"redis": {"json"}}})
	var oe *Error
	if !errors.As(err, &oe) || oe.Kind != Unavailable {
		t.Fatalf("want an Unavailable refusal, got %v", err)
	}
	var ue *plan.UnprovidableError
	if !errors.As(err, &ue) || ue.Count() != 1 || ue.Shortfalls[0].Missing[0] != "json" {
		t.Errorf("want the shortfall list (json) underneath, got %v", err)
	}
	if !errors.Is(err, api.ErrUnavailable) {
		t.Errorf("errors.Is(err, api.ErrUnavailable) = false for %v", err)
	}
	if e.prov.creates != 0 {
		t.Errorf("%d creates, want none", e.prov.creates)
	}
	if rec, err := e.store.Get(context.Background(), `sandbox.agent["k"]`); err != nil || rec != nil {
		t.Errorf("state: %v, %v; want no record", rec, err)
	}
}
