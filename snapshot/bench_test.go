package snapshot_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/snapshot"
)

// BenchmarkReset measures `reset` of a small data set (a 100-row pgvector
// table, 100 Redis keys) to a snapshot taken of the same sandbox: the
// template clone and swap, and the Redis reload, checksums included.
//
//	go test ./snapshot -run '^$' -bench Reset -benchtime 20x
func BenchmarkReset(b *testing.B) {
	ctx := context.Background()
	e := newEngine(b)
	rec := e.create(b, "sandbox.bench", 1, config.FeatureSet{"postgres": {"vector"}, "redis": {}})
	exec(b, pg(b, rec), `CREATE TABLE items (id int PRIMARY KEY, embedding vector(3));
		INSERT INTO items SELECT g, ARRAY[g, g, g]::vector FROM generate_series(1, 100) g`)
	r := rdb(b, rec)
	for i := range 100 {
		must(b, r.Set(ctx, "k"+itoa(i), "v", time.Hour).Err())
	}
	st := snapshot.Store{Dir: filepath.Join(b.TempDir(), "snapshots"), Formats: services.SnapshotFormats}
	if _, err := snapshot.Take(ctx, e.prov, st, rec, "base", time.Now()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := snapshot.Restore(ctx, e.prov, st, rec, "base"); err != nil {
			b.Fatal(err)
		}
	}
}
