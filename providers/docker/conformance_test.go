package docker

import (
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/providers/providertest"
)

// TestConformance runs the provider suite against the real engine; what
// it leaves behind is removed by lineage.
func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Subject {
		p, _ := newTestProvider(t)
		lineage := newLineage(t, p)
		t.Cleanup(func() { assertNothingLabelled(t, p, lineage) })
		return providertest.Subject{Provider: p, Lineage: lineage, Servers: true, Runtime: "docker"}
	})
}

// TestConformanceValkey runs the suite with valkey alone: service four
// through nothing of the runtime's own.
func TestConformanceValkey(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Subject {
		p, _ := newTestProvider(t)
		requireValkeyImage(t, p)
		lineage := newLineage(t, p)
		t.Cleanup(func() { assertNothingLabelled(t, p, lineage) })
		return providertest.Subject{Provider: p, Lineage: lineage, Features: config.FeatureSet{"valkey": {}}, Servers: true, Runtime: "docker"}
	})
}

// TestConformanceMySQL runs the suite with mysql alone: service three
// through nothing of the runtime's own (its data directory on the
// sandbox's storage as any service's that keeps data).
func TestConformanceMySQL(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Subject {
		p, _ := newTestProvider(t)
		requireMySQLImage(t, p)
		p.ReadyTimeout = 3 * time.Minute
		lineage := newLineage(t, p)
		t.Cleanup(func() { assertNothingLabelled(t, p, lineage) })
		return providertest.Subject{Provider: p, Lineage: lineage, Features: config.FeatureSet{"mysql": {}}, Servers: true, Runtime: "docker"}
	})
}
