package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxer/sandboxer/config"
)

// A feature asked for with a generation is missing from an image that has
// the feature in another generation, and said why; a plain name is
// provided by any generation; an image that does not say which
// generation it has is not checked (as an image that was not inspected).
func TestUnprovidableGenerations(t *testing.T) {
	caps := Capabilities{
		{Service: "redis"}: {Image: "sandboxer.local/redis:7", Features: map[string]string{"search": "1.2.0", "json": "2.4.0"},
			Generations: map[string]string{"search": "1"}},
		{Service: "valkey"}: {Image: "valkey/valkey-bundle:8", Features: map[string]string{"search": "1.0.1"}},
	}
	cfg := cfgOf(
		inst("sandbox.a", config.FeatureSet{"redis": {"search@2", "json"}}, nil),
		inst("sandbox.b", config.FeatureSet{"redis": {"search"}}, nil),
		inst("sandbox.c", config.FeatureSet{"redis": {"search@1"}}, nil),
		inst("sandbox.d", config.FeatureSet{"redis": {"search@1", "search@2"}}, nil),
		inst("sandbox.e", config.FeatureSet{"valkey": {"search@2"}}, nil),
		inst("sandbox.f", config.FeatureSet{"redis": {"bloom@2"}}, nil),
	)
	p, err := Build(cfg, snapOf(), nil, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var ue *UnprovidableError
	if err := p.Unprovidable(caps); !errors.As(err, &ue) {
		t.Fatalf("want *UnprovidableError, got %v", err)
	}
	type short struct {
		Addr     string
		Missing  []string
		Why      map[string]string
		Provided []string
	}
	var got []short
	for _, s := range ue.Shortfalls {
		got = append(got, short{s.Addr.String(), s.Missing, s.Why, s.Provided})
	}
	why := map[string]string{"search@2": "the image's search is API generation 1 (version 1.2.0), not 2"}
	provided := []string{"json 2.4.0", "search 1.2.0 (API generation 1)"}
	want := []short{
		{"sandbox.a", []string{"search@2"}, why, provided},
		{"sandbox.d", []string{"search@2"}, why, provided},
		{"sandbox.f", []string{"bloom@2"}, nil, provided},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shortfalls (-want +got):\n%s", diff)
	}

	if msg := ue.Error(); !strings.Contains(msg, `sandbox.a: redis image "sandboxer.local/redis:7" does not provide "search@2" (search: the image's search is API generation 1 (version 1.2.0), not 2)`) {
		t.Errorf("the error's text does not say what the image has: %s", msg)
	}

	NoteGenerations(p.Changes, caps)
	redisSearch := map[string]map[string]string{"redis": {"search": "1"}}
	wantGen := map[string]map[string]map[string]string{
		"sandbox.a": redisSearch, "sandbox.b": redisSearch, "sandbox.c": redisSearch, "sandbox.d": redisSearch,
		// valkey's image does not say; bloom is not provided.
		"sandbox.e": nil, "sandbox.f": nil,
	}
	for _, c := range p.Changes {
		if diff := cmp.Diff(wantGen[c.Addr.String()], c.After.Generations); diff != "" {
			t.Errorf("%s: generations (-want +got):\n%s", c.Addr, diff)
		}
	}
}
