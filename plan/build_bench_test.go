package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// BenchmarkBuild1000 is the cache rule alone over 1,000 declared instances
// in 20 projects against 1,000 cached ones (a mix of reuse and replace).
func BenchmarkBuild1000(b *testing.B) {
	cfg := &config.Config{Sandboxes: map[string]*config.Sandbox{}}
	snap := &state.Snapshot{Lineage: "l", Serial: 1, Records: map[string]*state.Record{}}
	for i := range 1000 {
		name := fmt.Sprintf("sb%04d", i)
		feats := config.FeatureSet{"postgres": {"vector"}, "redis": {}}
		if i%3 == 0 {
			feats["redis"] = []string{"search"}
		}
		in := inst("sandbox."+name, feats, nil)
		in.Project = fmt.Sprintf("p%02d", i%20)
		cfg.Instances = append(cfg.Instances, in)
		cfg.Sandboxes[name] = &config.Sandbox{Name: name, Project: in.Project}
		snap.Records[in.Addr.String()] = &state.Record{Address: in.Addr.String(), Project: in.Project,
			Services:  []string{"postgres", "redis"},
			Features:  map[string][]string{"postgres": {"pg_trgm", "vector"}, "redis": {}},
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), Generation: 1}
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := Build(cfg, snap, nil, Options{Now: now})
		if err != nil || len(p.Changes) != 1000 {
			b.Fatalf("plan: %v, %d changes", err, len(p.Changes))
		}
	}
}

// BenchmarkBuildDefaultImages1000 is a first plan of 1,000 instances with
// no image configured: every one is a create whose images are picked from
// the default table by its features (ChooseImages).
func BenchmarkBuildDefaultImages1000(b *testing.B) {
	cfg := &config.Config{Sandboxes: map[string]*config.Sandbox{}, Provider: &config.Provider{Images: map[string]config.Image{
		"postgres": {Ref: "postgres:17", Default: true}, "redis": {Ref: "redis:8", Default: true}}}}
	snap := &state.Snapshot{Lineage: "l", Serial: 1, Records: map[string]*state.Record{}}
	for i := range 1000 {
		name := fmt.Sprintf("sb%04d", i)
		feats := config.FeatureSet{"postgres": {"pg_trgm", "vector"}, "redis": {}}
		switch i % 3 {
		case 0:
			feats = config.FeatureSet{"postgres": {"citext", "postgis"}, "redis": {"search", "json"}}
		case 1:
			feats = config.FeatureSet{"postgres": {"hstore"}, "redis": {"bloom"}}
		}
		in := inst("sandbox."+name, feats, nil)
		cfg.Instances = append(cfg.Instances, in)
		cfg.Sandboxes[name] = &config.Sandbox{Name: name, Project: in.Project}
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := Build(cfg, snap, nil, Options{Now: now})
		if err != nil || len(p.Changes) != 1000 || p.Changes[0].After.Images["postgres"] == "" {
			b.Fatalf("plan: %v, %d changes", err, len(p.Changes))
		}
	}
}
