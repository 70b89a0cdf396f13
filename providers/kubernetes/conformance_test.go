package kubernetes

import (
	"context"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
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
		return providertest.Subject{Provider: p, Lineage: lineage, Servers: true, Runtime: "kubernetes"}
	})
}

// TestConformanceValkey and TestConformanceMySQL run the suite with one
// new service alone on the cluster.
func TestConformanceValkey(t *testing.T) {
	t.Parallel()
	conformanceOf(t, "valkey", envOr("SANDBOXER_TEST_VALKEY_IMAGE", "sandboxer.local/valkey:8"))
}

func TestConformanceMySQL(t *testing.T) {
	t.Parallel()
	conformanceOf(t, "mysql", envOr("SANDBOXER_TEST_MYSQL_IMAGE", "sandboxer.local/mysql:11.8"))
}

func conformanceOf(t *testing.T, svc, ref string) {
	providertest.Run(t, func(t *testing.T) providertest.Subject {
		p, _ := newTestProvider(t)
		p.cfg.Images[svc] = config.Image{Ref: ref}
		if p.ReadyTimeout < 3*time.Minute {
			p.ReadyTimeout = 3 * time.Minute
		}
		lineage := newLineage(t, p)
		t.Cleanup(func() {
			mustf(t, p.SweepShared(context.Background(), lineage), "SweepShared")
			assertNothingLabelled(t, p, lineage)
		})
		return providertest.Subject{Provider: p, Lineage: lineage, Features: config.FeatureSet{svc: {}}, Servers: true, Runtime: "kubernetes"}
	})
}
