package kubernetes

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// A service that cannot start fails Create with its log, scrubbed, and
// Create leaves nothing behind.
func TestFailedCreateLeavesNothing(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, secrets := newTestProvider(t)
	p.cfg.Images["redis"] = config.Image{Ref: testRedisImage(), Modules: map[string]string{"search": "/nonexistent/redisearch.so"}}
	lineage := newLineage(t, p)
	ctx := ctxFor(t, 3*time.Minute)
	_, err := p.Create(ctx, apply.CreateRequest{Address: "sandbox.broken", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}, "redis": {"search"}}})
	if err == nil {
		t.Fatal("Create with a module that does not exist succeeded")
	}
	if !strings.Contains(err.Error(), "redis") || !strings.Contains(err.Error(), "/nonexistent/redisearch.so") {
		t.Errorf("error does not say what failed: %v", err)
	}
	secrets.assertNoSecret(t, "the error", fmt.Sprintf("%v %+v", err, err))
	assertNothingLabelled(t, p, lineage)
}
