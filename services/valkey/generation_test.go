package valkey

import (
	"testing"

	"github.com/sandboxer/sandboxer/services/contract"
)

var _ contract.GenerationDetector = Service{}

// valkey-search speaks the Redis Search 2.x API from its 1.0 on: its own
// version does not make it generation 1.
func TestFeatureGeneration(t *testing.T) {
	for _, tc := range []struct{ feature, version, want string }{
		{"search", "1.0.1", "2"},
		{"search", "2.1.0", "2"},
		{"search", "", ""},
		{"json", "1.0.0", ""},
		{"bloom", "1.0.0", ""},
	} {
		if got := (Service{}).FeatureGeneration(tc.feature, tc.version); got != tc.want {
			t.Errorf("FeatureGeneration(%s, %q) = %q; want %q", tc.feature, tc.version, got, tc.want)
		}
	}
}
