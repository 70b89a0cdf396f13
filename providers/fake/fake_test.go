package fake_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"

	"github.com/sandboxer/sandboxer/providers/fake"
	"github.com/sandboxer/sandboxer/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Subject {
		return providertest.Subject{Provider: fake.New(nil)}
	})
}

// One provider across the whole suite: everything it made is gone after.
func TestSuiteLeavesNothing(t *testing.T) {
	p := fake.New(nil)
	providertest.Run(t, func(t *testing.T) providertest.Subject { return providertest.Subject{Provider: p} })
	if live := p.Live(); len(live) != 0 {
		t.Errorf("the suite left instances behind: %v", live)
	}
}

func TestKillMakesProbeReportNotFound(t *testing.T) {
	ctx := context.Background()
	p := fake.New(nil)
	req := apply.CreateRequest{Address: "sandbox.a", Generation: 1, Features: config.FeatureSet{"redis": {"search"}}}
	c, err := p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	rec := &state.Record{Address: "sandbox.a", Services: []string{"redis"}, Credentials: c.Credentials, Resources: c.Resources, Generation: 1}
	if err := p.Probe(ctx, rec); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if n := p.Kill("sandbox.a"); n != 1 {
		t.Fatalf("Kill = %d, want 1", n)
	}
	if err := p.Probe(ctx, rec); !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Probe after Kill = %v, want apply.ErrNotFound", err)
	}
}

func TestCreateRefusesFeaturesOffTheAllowlist(t *testing.T) {
	p := fake.New(nil)
	_, err := p.Create(context.Background(), apply.CreateRequest{Address: "sandbox.a", Generation: 1,
		Features: config.FeatureSet{"postgres": {"plpython3u"}}})
	if err == nil {
		t.Fatal("Create accepted plpython3u")
	}
	if live := p.Live(); len(live) != 0 {
		t.Errorf("a refused Create left %v", live)
	}
}
