package kubernetes

import (
	"context"
	"testing"

	"github.com/sandboxer/sandboxer/providers/providertest"
)

// TestConformance runs the provider suite against the real cluster; what
// it leaves is deleted by lineage, and nothing may be left once the
// lineage's shared objects went as apply's end-of-run sweep removes them.
func TestConformance(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	providertest.Run(t, func(t *testing.T) providertest.Subject {
		p, _ := newTestProvider(t)
		lineage := newLineage(t, p)
		t.Cleanup(func() {
			mustf(t, p.SweepShared(context.Background(), lineage), "SweepShared")
			assertNothingLabelled(t, p, lineage)
		})
		return providertest.Subject{Provider: p, Lineage: lineage}
	})
}
