package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The default image for a feature set is the first of DefaultImages that
// provides all of it; a configured image always wins; a set no default
// covers is refused with the candidates and the recipe.
func TestImageFor(t *testing.T) {
	defaults := &Provider{Images: map[string]Image{
		"postgres": {Ref: "postgres:17", Default: true},
		"redis":    {Ref: "redis:8", Default: true},
	}}
	configured := &Provider{Images: map[string]Image{
		"postgres": {Ref: "sandboxer.local/postgres:17"},
		"redis":    {Ref: "sandboxer.local/redis:7", Modules: map[string]string{"search": "/m/search.so"}},
	}}
	for _, tc := range []struct {
		name     string
		prov     *Provider
		service  string
		features []string
		want     string
		// wantCandidates, when set, expects a NoDefaultImageError.
		wantCandidates []ImageCandidate
	}{
		{name: "bare postgres", prov: defaults, service: "postgres", want: "postgres:17"},
		{name: "contrib only", prov: defaults, service: "postgres", features: []string{"citext", "hstore", "pg_trgm", "uuid-ossp"}, want: "postgres:17"},
		{name: "vector", prov: defaults, service: "postgres", features: []string{"pg_trgm", "vector"}, want: "pgvector/pgvector:pg17"},
		{name: "postgis", prov: defaults, service: "postgres", features: []string{"fuzzystrmatch", "postgis"}, want: "postgis/postgis:17-3.5"},
		{name: "timescaledb", prov: defaults, service: "postgres", features: []string{"timescaledb"}, want: "timescale/timescaledb:latest-pg17"},
		{name: "bare redis", prov: defaults, service: "redis", want: "redis:8"},
		{name: "redis modules", prov: defaults, service: "redis", features: []string{"bloom", "json", "search"}, want: "redis:8"},
		{name: "vector and postgis", prov: defaults, service: "postgres", features: []string{"vector", "pg_trgm", "postgis"},
			wantCandidates: []ImageCandidate{
				{Ref: "pgvector/pgvector:pg17", Lacks: []string{"postgis"}},
				{Ref: "postgis/postgis:17-3.5", Lacks: []string{"vector"}},
			}},
		{name: "vector and timescaledb", prov: defaults, service: "postgres", features: []string{"timescaledb", "vector"},
			wantCandidates: []ImageCandidate{
				{Ref: "pgvector/pgvector:pg17", Lacks: []string{"timescaledb"}},
				{Ref: "timescale/timescaledb:latest-pg17", Lacks: []string{"vector"}},
			}},
		{name: "configured wins, bare", prov: configured, service: "postgres", want: "sandboxer.local/postgres:17"},
		{name: "configured wins over a default with vector", prov: configured, service: "postgres", features: []string{"vector"}, want: "sandboxer.local/postgres:17"},
		{name: "configured wins where no default would do", prov: configured, service: "postgres", features: []string{"postgis", "vector"}, want: "sandboxer.local/postgres:17"},
		{name: "configured redis", prov: configured, service: "redis", features: []string{"search"}, want: "sandboxer.local/redis:7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := tc.prov.ImageFor(tc.service, tc.features)
			if tc.wantCandidates != nil {
				var ne *NoDefaultImageError
				if !errors.As(err, &ne) {
					t.Fatalf("ImageFor = %v, %v; want a NoDefaultImageError", img, err)
				}
				if diff := cmp.Diff(tc.wantCandidates, ne.Candidates); diff != "" {
					t.Errorf("candidates (-want +got):\n%s", diff)
				}
				for _, c := range tc.wantCandidates {
					if !strings.Contains(err.Error(), c.Ref) {
						t.Errorf("message does not name candidate %s: %s", c.Ref, err)
					}
				}
				if !strings.Contains(err.Error(), "images/build.sh") || !strings.Contains(err.Error(), `image "postgres" { ref`) {
					t.Errorf("message does not say how to build and name one image: %s", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ImageFor: %v", err)
			}
			if img.Ref != tc.want {
				t.Errorf("ImageFor = %s, want %s", img.Ref, tc.want)
			}
			if want := tc.prov.Images[tc.service]; !want.Default && !cmp.Equal(img, want) {
				t.Errorf("configured image not returned whole: %+v, want %+v", img, want)
			}
		})
	}
}

// Every feature on the allowlist has a default image, so only a set that
// needs two packaged extensions is refused.
func TestDefaultImagesCoverTheAllowlist(t *testing.T) {
	cat := DefaultCatalog()
	defaults := &Provider{Images: map[string]Image{}}
	for _, svc := range cat.Services() {
		for _, f := range cat.Allowed(svc) {
			if _, err := defaults.ImageFor(svc, []string{f}); err != nil {
				t.Errorf("%s %q: %v", svc, f, err)
			}
		}
		if _, err := defaults.ImageFor(svc, packagedFeatures(svc)); svc == "redis" && err != nil {
			t.Errorf("redis:8 should have every redis feature: %v", err)
		}
	}
}

func TestDefaultImageWith(t *testing.T) {
	for _, tc := range []struct {
		service, feature, want string
		ok                     bool
	}{
		{"postgres", "vector", "pgvector/pgvector:pg17", true},
		{"postgres", "postgis", "postgis/postgis:17-3.5", true},
		{"postgres", "timescaledb", "timescale/timescaledb:latest-pg17", true},
		{"postgres", "pg_trgm", "", false}, // in every default image
		{"redis", "json", "redis:8", true},
	} {
		got, ok := DefaultImageWith(tc.service, tc.feature)
		if got != tc.want || ok != tc.ok {
			t.Errorf("DefaultImageWith(%s, %s) = %q, %v; want %q, %v", tc.service, tc.feature, got, ok, tc.want, tc.ok)
		}
	}
}

// What a runtime may start for a ref a (saved) plan names: the configured
// image only, or with none configured a default image, nothing else.
func TestImageForRef(t *testing.T) {
	configured := &Provider{Images: map[string]Image{
		"postgres": {Ref: "sandboxer.local/postgres:17"},
		"redis":    {Ref: defaultImageRef("redis"), Default: true},
	}}
	if img, err := configured.ImageForRef("postgres", "sandboxer.local/postgres:17", nil); err != nil || img.Ref != "sandboxer.local/postgres:17" {
		t.Errorf("the configured image: %v, %v", img, err)
	}
	if _, err := configured.ImageForRef("postgres", "pgvector/pgvector:pg17", nil); err == nil {
		t.Error("a default image was accepted where another is configured")
	}
	if img, err := configured.ImageForRef("redis", "redis:8", nil); err != nil || !img.Default {
		t.Errorf("a default image with none configured: %v, %v", img, err)
	}
	if _, err := configured.ImageForRef("redis", "attacker/redis:latest", nil); err == nil {
		t.Error("an image neither configured nor default was accepted")
	}
	if img, err := configured.ImageForRef("postgres", "", nil); err != nil || img.Ref != "sandboxer.local/postgres:17" {
		t.Errorf("no ref: %v, %v", img, err)
	}
}
