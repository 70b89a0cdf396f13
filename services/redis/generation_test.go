package redis

import (
	"testing"

	"github.com/sandboxer/sandboxer/services/contract"
)

var _ contract.GenerationDetector = Service{}

func TestSearchGeneration(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"1.2.0", "1"},  // Debian's redis-redisearch (MODULE LIST "ft", ver 10200)
		{"1.6.16", "1"}, // the last 1.x
		{"2.0.0", "2"},  // RediSearch 2: indexes follow hashes by prefix
		{"2.10.7", "2"},
		{"8.0.2", "2"}, // redis:8's built-in search reports the server's version
		{"", ""},
		{"x.y", ""},
		{"-1.0.0", ""},
	} {
		if got := SearchGeneration(tc.version); got != tc.want {
			t.Errorf("SearchGeneration(%q) = %q; want %q", tc.version, got, tc.want)
		}
	}
	if got := (Service{}).FeatureGeneration("json", "2.4.0"); got != "" {
		t.Errorf("json has a generation %q; want none", got)
	}
	if got := (Service{}).FeatureGeneration("search", "1.2.0"); got != "1" {
		t.Errorf("FeatureGeneration(search, 1.2.0) = %q; want 1", got)
	}
}
