package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFeature(t *testing.T) {
	for _, tc := range []struct{ in, name, gen string }{
		{"search", "search", ""},
		{"search@2", "search", "2"},
		{"search@", "search", ""},
		{"uuid-ossp", "uuid-ossp", ""},
		{"a@b@c", "a", "b@c"},
	} {
		name, gen := ParseFeature(tc.in)
		if name != tc.name || gen != tc.gen {
			t.Errorf("ParseFeature(%q) = %q, %q; want %q, %q", tc.in, name, gen, tc.name, tc.gen)
		}
		if FeatureName(tc.in) != tc.name {
			t.Errorf("FeatureName(%q) = %q; want %q", tc.in, FeatureName(tc.in), tc.name)
		}
	}
}

func TestCheckFeatureGenerations(t *testing.T) {
	cat := DefaultCatalog()
	for _, tc := range []struct {
		service, feature string
		want             string // "" for allowed, else a substring of the error
	}{
		{"redis", "search", ""},
		{"redis", "search@1", ""},
		{"redis", "search@2", ""},
		{"valkey", "search@2", ""},
		{"valkey", "search@1", `valkey feature "search" has no API generation "1"; allowed: search (any generation), search@2`},
		{"redis", "search@7", `allowed: search (any generation), search@1, search@2`},
		{"redis", "search@", `has no API generation ""`},
		{"redis", "json@2", `redis feature "json" has no API generations to choose from; write "json" without @2`},
		{"postgres", "vector@0.8", `has no API generations`},
		{"redis", "debugger@2", `not on the allowlist; allowed: bloom, json, search`},
	} {
		err := cat.CheckFeature(tc.service, tc.feature)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckFeature(%s, %s) = %v; want allowed", tc.service, tc.feature, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckFeature(%s, %s) = %v; want an error with %q", tc.service, tc.feature, err, tc.want)
		}
		var ge *GenerationNotAllowedError
		if tc.want != "" && strings.Contains(tc.want, "generation") && !errors.As(err, &ge) {
			t.Errorf("CheckFeature(%s, %s): %T is no *GenerationNotAllowedError", tc.service, tc.feature, err)
		}
	}
	if got := cat.Generations("redis", "search@2"); !cmp.Equal(got, []string{"1", "2"}) {
		t.Errorf("Generations(redis, search) = %v", got)
	}
	if got := cat.Generations("redis", "json"); got != nil {
		t.Errorf("Generations(redis, json) = %v; want none", got)
	}
}

// A generation asked for is held only by the same generation; a plain
// name by any.
func TestMissingGenerations(t *testing.T) {
	for _, tc := range []struct {
		have, want, missing []string
	}{
		{[]string{"search@2"}, []string{"search"}, nil},
		{[]string{"search@2"}, []string{"search@2"}, nil},
		{[]string{"search"}, []string{"search@2"}, []string{"search@2"}},
		{[]string{"search@1"}, []string{"search@2"}, []string{"search@2"}},
		{[]string{"json", "search@1"}, []string{"json", "search"}, nil},
		{nil, []string{"search@2"}, []string{"search@2"}},
	} {
		got := FeatureSet{"redis": tc.have}.Missing(FeatureSet{"redis": tc.want})
		want := FeatureSet{}
		if tc.missing != nil {
			want["redis"] = tc.missing
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%v.Missing(%v) (-want +got):\n%s", tc.have, tc.want, diff)
		}
	}
}

func TestFeatureSetNames(t *testing.T) {
	got := FeatureSet{"redis": {"json", "search", "search@2"}, "postgres": {}}.Names()
	want := FeatureSet{"redis": {"json", "search"}, "postgres": {}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

// "search@2" in HCL is kept as written through the effective sets, and a
// default image is chosen by the feature's name.
func TestLoadFeatureGeneration(t *testing.T) {
	cfg := load(t, `
project "shop" {
  services   = ["redis", "valkey"]
  extensions = { redis = ["search@2", "json"] }
}
sandbox "ci" {
  project    = project.shop
  extensions = { valkey = ["search@2"] }
}
`, Input{})
	in := cfg.Instances[0]
	want := FeatureSet{"redis": {"json", "search@2"}, "valkey": {"search@2"}}
	if diff := cmp.Diff(want, in.Features); diff != "" {
		t.Errorf("features (-want +got):\n%s", diff)
	}
	var p *Provider
	img, err := p.ImageFor("redis", in.Features["redis"])
	if err != nil || img.Ref != "redis:8" {
		t.Errorf("ImageFor(redis, %v) = %v, %v; want redis:8", in.Features["redis"], img.Ref, err)
	}
	img, err = p.ImageFor("valkey", in.Features["valkey"])
	if err != nil || img.Ref != "valkey/valkey-bundle:8" {
		t.Errorf("ImageFor(valkey, %v) = %v, %v; want valkey/valkey-bundle:8", in.Features["valkey"], img.Ref, err)
	}
}
