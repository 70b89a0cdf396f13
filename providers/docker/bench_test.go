package docker

import (
	"context"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// BenchmarkCreatePostgresRedis measures a cold create of
// postgres[vector] + redis[search] to ready, then its delete. create-ms/op
// reports the create part alone.
func BenchmarkCreatePostgresRedis(b *testing.B) {
	p, _ := newTestProvider(b)
	lineage := newLineage(b, p)
	ctx := context.Background()
	var create time.Duration
	gen := 0
	for b.Loop() {
		gen++
		req := apply.CreateRequest{
			Address: "sandbox.bench", Lineage: lineage, Generation: gen,
			Features: config.FeatureSet{"postgres": {"vector"}, "redis": {"search"}},
		}
		start := time.Now()
		c, err := p.Create(ctx, req)
		if err != nil {
			b.Fatalf("Create: %v", err)
		}
		create += time.Since(start)
		if err := p.Delete(ctx, recordFor(req, c)); err != nil {
			b.Fatalf("Delete: %v", err)
		}
	}
	b.ReportMetric(float64(create.Milliseconds())/float64(gen), "create-ms/op")
}

// BenchmarkProbe measures Probe of a live postgres + redis instance.
func BenchmarkProbe(b *testing.B) {
	p, _ := newTestProvider(b)
	lineage := newLineage(b, p)
	ctx := context.Background()
	req := apply.CreateRequest{
		Address: "sandbox.probe", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}, "redis": {}},
	}
	c, err := p.Create(ctx, req)
	if err != nil {
		b.Fatalf("Create: %v", err)
	}
	rec := recordFor(req, c)
	for b.Loop() {
		if err := p.Probe(ctx, rec); err != nil {
			b.Fatalf("Probe: %v", err)
		}
	}
}
