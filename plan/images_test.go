package plan

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxer/sandboxer/config"
)

func defaultProvider() *config.Provider {
	return &config.Provider{Images: map[string]config.Image{
		"postgres": {Ref: "postgres:17", Default: true},
		"redis":    {Ref: "redis:8", Default: true},
	}}
}

// Every create and replace gets the image for the features it will have
// (for a replace, the union with the cache); a reuse and a delete get none.
func TestChooseImages(t *testing.T) {
	cfg := cfgOf(
		inst("sandbox.new", config.FeatureSet{"postgres": {"vector"}}, nil),
		inst("sandbox.grow", config.FeatureSet{"postgres": {"pg_trgm"}, "redis": {"search"}}, nil),
		inst("sandbox.same", config.FeatureSet{"postgres": {}}, nil),
	)
	cfg.Provider = defaultProvider()
	snap := snapOf(
		rec("sandbox.grow", config.FeatureSet{"postgres": {"postgis"}, "redis": {}}),
		rec("sandbox.same", config.FeatureSet{"postgres": {"timescaledb"}, "redis": {}}),
		rec("sandbox.gone", config.FeatureSet{"postgres": {}}),
	)
	p, err := Build(cfg, snap, nil, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, c := range p.Changes {
		if c.After != nil {
			got[c.Addr.String()] = c.After.Images
		}
	}
	want := map[string]map[string]string{
		"sandbox.new":  {"postgres": "pgvector/pgvector:pg17", "redis": "redis:8"},
		"sandbox.grow": {"postgres": "postgis/postgis:17-3.5", "redis": "redis:8"},
		"sandbox.same": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	wantUses := []ImageUse{
		{"postgres", "pgvector/pgvector:pg17", ""}, {"postgres", "postgis/postgis:17-3.5", ""}, {"redis", "redis:8", ""},
	}
	if diff := cmp.Diff(wantUses, ImagesToStart(p.Changes)); diff != "" {
		t.Errorf("ImagesToStart (-want +got):\n%s", diff)
	}
}

// A create, or a replace whose union with the cache, that needs two
// packaged extensions is refused, every such instance at once.
func TestChooseImagesRefuses(t *testing.T) {
	cfg := cfgOf(
		inst("sandbox.both", config.FeatureSet{"postgres": {"postgis", "vector"}}, nil),
		inst("sandbox.union", config.FeatureSet{"postgres": {"postgis"}}, nil),
		inst("sandbox.fine", config.FeatureSet{"postgres": {"vector"}}, nil),
	)
	cfg.Provider = defaultProvider()
	snap := snapOf(rec("sandbox.union", config.FeatureSet{"postgres": {"vector"}, "redis": {}}))
	_, err := Build(cfg, snap, nil, Options{Now: now})
	var ne *NoImageError
	if !errors.As(err, &ne) {
		t.Fatalf("Build = %v, want a *NoImageError", err)
	}
	var got []string
	for _, r := range ne.Refusals {
		got = append(got, r.Addr.String()+" "+r.Err.Service)
		if diff := cmp.Diff([]string{"postgis", "vector"}, r.Err.Features); diff != "" {
			t.Errorf("%s features (-want +got):\n%s", r.Addr, diff)
		}
	}
	if diff := cmp.Diff([]string{"sandbox.both postgres", "sandbox.union postgres"}, got); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
	// A configured image takes any set.
	cfg.Provider.Images["postgres"] = config.Image{Ref: "local/pg:17"}
	p, err := Build(cfg, snap, nil, Options{Now: now})
	if err != nil {
		t.Fatalf("with a configured image: %v", err)
	}
	for _, c := range p.Changes {
		if c.After.Images["postgres"] != "local/pg:17" {
			t.Errorf("%s runs %q, want the configured image", c.Addr, c.After.Images["postgres"])
		}
	}
}

// Capabilities are per image: two sandboxes on different postgres images
// are each checked against their own.
func TestUnprovidablePerImage(t *testing.T) {
	cfg := cfgOf(
		inst("sandbox.vec", config.FeatureSet{"postgres": {"vector"}}, nil),
		inst("sandbox.geo", config.FeatureSet{"postgres": {"postgis"}}, nil),
	)
	cfg.Provider = defaultProvider()
	p, err := Build(cfg, snapOf(), nil, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	caps := Capabilities{
		{Service: "postgres", Ref: "pgvector/pgvector:pg17"}: {Image: "pgvector/pgvector:pg17", Features: map[string]string{"vector": "0.8.0"}},
		// As if the postgis image had lost its extension.
		{Service: "postgres", Ref: "postgis/postgis:17-3.5"}: {Image: "postgis/postgis:17-3.5", Features: map[string]string{"vector": "0.8.0"}},
	}
	var ue *UnprovidableError
	if err := p.Unprovidable(caps); !errors.As(err, &ue) || len(ue.Shortfalls) != 1 ||
		ue.Shortfalls[0].Addr.String() != "sandbox.geo" || ue.Shortfalls[0].Image != "postgis/postgis:17-3.5" {
		t.Fatalf("Unprovidable = %v, want only sandbox.geo on the postgis image", err)
	}
}
