package snapshot

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/config"
)

// TestCheckSeed: plan's check of a seed against what the instance will
// have, before anything is created. No engine is needed: only the
// snapshot's manifest is read.
func TestCheckSeed(t *testing.T) {
	st := Store{Dir: t.TempDir(), Formats: func(svc string) (FileFormat, bool) { return FileFormat{Name: svc, Ext: ".data"}, true }}
	man := &Manifest{Name: "vec", Services: []string{"postgres", "redis"},
		Features: map[string][]string{"postgres": {"vector"}, "redis": {}}}
	err := st.Save(man, func(string, io.Writer) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	m := Mover{Store: st}
	if err := (Store{Dir: t.TempDir()}).Save(man, func(string, io.Writer) error { return nil }); err == nil {
		t.Error("a store that knows no service's format saved a snapshot")
	}
	ctx := context.Background()
	both := []string{"postgres", "redis"}

	if err := m.CheckSeed(ctx, "sandbox.ok", both, config.FeatureSet{"postgres": {"postgis", "vector"}, "redis": {}}, &config.Seed{Snapshot: "vec"}); err != nil {
		t.Errorf("a sandbox with more than the snapshot needs: %v", err)
	}
	err = m.CheckSeed(ctx, "sandbox.plain", both, config.FeatureSet{"postgres": {}, "redis": {}}, &config.Seed{Snapshot: "vec"})
	var mf *MissingFeatureError
	if !errors.As(err, &mf) || mf.Feature != "vector" {
		t.Errorf("a sandbox without vector: %v", err)
	}
	err = m.CheckSeed(ctx, "sandbox.pg", []string{"postgres"}, config.FeatureSet{"postgres": {"vector"}}, &config.Seed{Snapshot: "vec"})
	if !errors.As(err, &mf) || mf.Service != "redis" {
		t.Errorf("a sandbox without redis: %v", err)
	}
	err = m.CheckSeed(ctx, "sandbox.ok", both, config.FeatureSet{"postgres": {"vector"}, "redis": {}}, &config.Seed{Snapshot: "nosuch"})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing snapshot: %v", err)
	}
	err = m.CheckSeed(ctx, "sandbox.kv", []string{"redis"}, config.FeatureSet{"redis": {}}, &config.Seed{SQL: []config.SeedFile{{Path: "schema.sql"}}})
	if err == nil || !strings.Contains(err.Error(), "seed_sql needs postgres") {
		t.Errorf("seed SQL without postgres: %v", err)
	}
}
