package snapshot

import (
	"errors"
	"testing"

	"github.com/sandboxer/sandboxer/state"
)

// A snapshot needs its source's features by name: the API generation
// either side asked for does not change what the data needs.
func TestCheckFeaturesGenerations(t *testing.T) {
	m := &Manifest{Name: "s", Services: []string{"redis"}, Features: map[string][]string{"redis": {"search@2"}}}
	for _, have := range [][]string{{"search"}, {"search@2"}, {"json", "search@1"}} {
		if err := CheckFeatures(m, &state.Record{Address: "sandbox.a", Services: []string{"redis"}, Features: map[string][]string{"redis": have}}); err != nil {
			t.Errorf("into %v: %v", have, err)
		}
	}
	var mf *MissingFeatureError
	err := CheckFeatures(m, &state.Record{Address: "sandbox.a", Services: []string{"redis"}, Features: map[string][]string{"redis": {"json"}}})
	if !errors.As(err, &mf) || mf.Feature != "search@2" {
		t.Errorf("into [json]: %v; want a *MissingFeatureError for search@2", err)
	}
}
