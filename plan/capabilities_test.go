package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxer/sandboxer/config"
)

func TestUnprovidable(t *testing.T) {
	caps := Capabilities{
		{Service: "postgres"}: {Image: "pg:17", Features: map[string]string{"timescaledb": "2.19.3", "vector": "0.8.0"}},
		{Service: "redis"}: {Image: "redis:7", Features: map[string]string{"search": "1.2.0"},
			Unusable: map[string]string{"json": "module /x/rejson.so does not load"}, Hint: "set modules"},
	}
	cfg := cfgOf(
		// New: everything missing is listed, for every service.
		inst("sandbox.a", config.FeatureSet{"postgres": {"timescaledb"}, "redis": {"json", "bloom"}}, nil),
		// Replace: the union is what gets provisioned, so what the cache
		// already holds counts too.
		inst("sandbox.b", config.FeatureSet{"redis": {"search"}}, nil),
		// Reuse: never checked, even though the cache holds bloom.
		inst("sandbox.c", config.FeatureSet{"redis": {}}, nil),
		// Fine.
		inst(`sandbox.d["k"]`, config.FeatureSet{"postgres": {"vector"}}, nil),
	)
	snap := snapOf(
		rec("sandbox.b", config.FeatureSet{"postgres": {}, "redis": {"bloom"}}),
		rec("sandbox.c", config.FeatureSet{"postgres": {}, "redis": {"bloom"}}),
	)
	p, err := Build(cfg, snap, nil, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Unprovidable(caps)
	var ue *UnprovidableError
	if !errors.As(err, &ue) {
		t.Fatalf("want *UnprovidableError, got %v", err)
	}
	type short struct {
		Addr, Service string
		Missing       []string
		Why           map[string]string
	}
	var got []short
	for _, s := range ue.Shortfalls {
		got = append(got, short{s.Addr.String(), s.Service, s.Missing, s.Why})
	}
	want := []short{
		{"sandbox.a", "redis", []string{"bloom", "json"}, map[string]string{"json": "module /x/rejson.so does not load"}},
		{"sandbox.b", "redis", []string{"bloom"}, nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shortfalls (-want +got):\n%s", diff)
	}
	if ue.Count() != 3 {
		t.Errorf("Count = %d, want 3", ue.Count())
	}
	if diff := cmp.Diff([]string{"search 1.2.0"}, ue.Shortfalls[0].Provided); diff != "" {
		t.Errorf("provided (-want +got):\n%s", diff)
	}
	msg := err.Error()
	for _, want := range []string{`sandbox.a: redis image "redis:7" does not provide "bloom", "json"`, `sandbox.b: redis`, "nothing was created"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
}

func TestUnprovidableNothingMissing(t *testing.T) {
	cfg := cfgOf(inst("sandbox.a", config.FeatureSet{"postgres": {"vector"}, "redis": {"json"}}, nil))
	p, err := Build(cfg, snapOf(), nil, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// A service the provider did not report on is not checked (refresh
	// off, or a provider that cannot tell).
	caps := Capabilities{{Service: "postgres"}: {Image: "pg", Features: map[string]string{"vector": ""}}}
	if err := p.Unprovidable(caps); err != nil {
		t.Errorf("want nil, got %v", err)
	}
	if err := p.Unprovidable(nil); err != nil {
		t.Errorf("nil capabilities: want nil, got %v", err)
	}
	// A delete never needs anything.
	d, err := Build(cfgOf(), snapOf(rec("sandbox.a", config.FeatureSet{"redis": {"json"}})), nil, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Unprovidable(Capabilities{{Service: "redis"}: {Features: map[string]string{}}}); err != nil {
		t.Errorf("delete plan: want nil, got %v", err)
	}
}
