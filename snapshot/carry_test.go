package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// TestCarriedReplaceAndSeed runs apply's executor on the real engine: a
// sandbox seeded from a SQL file (run as the handed-out role) gets
// pgvector rows and a Redis key, then a feature-superset replace with
// carry_data keeps both in the new generation; a carry that fails keeps
// the old generation recorded and its data untouched, and removes the
// new one.
func TestCarriedReplaceAndSeed(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "schema.sql"), []byte(
		"CREATE TABLE docs (id int PRIMARY KEY, embedding vector(2));\nINSERT INTO docs VALUES (1, '[1,1]');\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := state.Open(filepath.Join(dir, ".sandboxer", "state.db"))
	st := snapshot.Store{Dir: filepath.Join(dir, ".sandboxer", "snapshots"), Formats: services.SnapshotFormats}
	mover := snapshot.Mover{Engine: e.prov, SQL: e.prov, Store: st, Dir: dir}
	ex := &apply.Executor{Provider: e.prov, Store: store, Lineage: e.lineage, Parallelism: 1, Data: mover}

	a, _ := config.ParseAddress("sandbox.keep")
	seed := &config.Seed{SQL: []config.SeedFile{{Path: "schema.sql", SHA256: sha256File(t, filepath.Join(dir, "schema.sql"))}}}
	v1 := config.FeatureSet{"postgres": {"vector"}, "redis": {}}
	first := &plan.Change{Addr: a, Project: "p", Action: plan.Create, Reason: plan.ReasonNew,
		After: &plan.Sandbox{Services: v1.Services(), Features: v1}, Seed: seed, SeedDigest: seed.Digest()}
	if _, err := ex.Apply(ctx, nil, &plan.Plan{Changes: []*plan.Change{first}}); err != nil {
		t.Fatalf("create seeded: %v", err)
	}
	g1, err := store.Get(ctx, a.String())
	if err != nil || g1 == nil {
		t.Fatalf("record: %v", err)
	}
	if g1.SeedDigest != seed.Digest() {
		t.Errorf("recorded seed digest %q", g1.SeedDigest)
	}
	if got := queryString(t, g1, `SELECT tableowner::text FROM pg_tables WHERE tablename = 'docs'`); got != g1.Credentials["postgres"].User {
		t.Errorf("seeded table owned by %q, want the handed-out role", got)
	}
	exec(t, pg(t, g1), `INSERT INTO docs VALUES (2, '[2,2]')`)
	must(t, rdb(t, g1).Set(ctx, "session:42", "agent-state", 0).Err())

	v2 := config.FeatureSet{"postgres": {"pg_trgm", "vector"}, "redis": {}}
	replace := func() *plan.Change {
		return &plan.Change{Addr: a, Project: "p", Action: plan.CreateThenDelete, Reason: plan.ReasonFeatureSuperset,
			Before: &plan.Sandbox{Services: v1.Services(), Features: v1}, After: &plan.Sandbox{Services: v2.Services(), Features: v2},
			PriorGeneration: 1, Seed: seed, SeedDigest: seed.Digest(), CarryData: true}
	}

	t.Run("failed carry keeps the old generation", func(t *testing.T) {
		broken := &apply.Executor{Provider: e.prov, Store: store, Lineage: e.lineage, Parallelism: 1,
			Data: snapshot.Mover{Engine: failingLoad{e.prov}, Store: st, Dir: dir}}
		_, err := broken.Apply(ctx, nil, &plan.Plan{Changes: []*plan.Change{replace()}})
		if err == nil || !strings.Contains(err.Error(), "generation 1 is kept, unchanged") {
			t.Fatalf("apply: %v, want the carry failure", err)
		}
		rec, _ := store.Get(ctx, a.String())
		if rec == nil || rec.Generation != 1 {
			t.Fatalf("record after a failed carry: %+v", rec)
		}
		if got := queryString(t, rec, `SELECT count(*)::text FROM docs`); got != "2" {
			t.Errorf("old generation has %s rows", got)
		}
		left, err := e.prov.ListManaged(ctx, e.lineage)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range left {
			if m.Generation != 1 {
				t.Errorf("left behind from the failed replace: %s %s", m.Kind, m.Name)
			}
		}
	})

	start := time.Now()
	if _, err := ex.Apply(ctx, nil, &plan.Plan{Changes: []*plan.Change{replace()}}); err != nil {
		t.Fatalf("carried replace: %v", err)
	}
	t.Logf("carried replace took %s", time.Since(start).Round(time.Millisecond))
	g2, _ := store.Get(ctx, a.String())
	if g2 == nil || g2.Generation != 2 || g2.Credentials["postgres"].Password == g1.Credentials["postgres"].Password {
		t.Fatalf("not replaced with rotated credentials: %+v", g2)
	}
	if got := queryString(t, g2, `SELECT string_agg(id || '=' || embedding::text, ' ' ORDER BY id) FROM docs`); got != "1=[1,1] 2=[2,2]" {
		t.Errorf("carried docs = %q", got)
	}
	if v, err := rdb(t, g2).Get(ctx, "session:42").Result(); err != nil || v != "agent-state" {
		t.Errorf("carried redis key = %q, %v", v, err)
	}
	if err := e.prov.Probe(ctx, g1); !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("old generation still there after the replace: %v", err)
	}
}

// failingLoad dumps for real but fails every load.
type failingLoad struct{ snapshot.Engine }

func (failingLoad) Load(context.Context, *state.Record, string, snapshot.Data) error {
	return errors.New("disk full")
}
