package config

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestUnionOnly: UnionOnly is Union then Only, on random sets.
func TestUnionOnly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	names := []string{"postgres", "redis", "x"}
	feats := []string{"a", "b", "c", "vector"}
	set := func() FeatureSet {
		if r.IntN(5) == 0 {
			return nil
		}
		fs := FeatureSet{}
		for _, svc := range names {
			switch r.IntN(3) {
			case 0:
				continue
			case 1:
				fs[svc] = []string{}
			default:
				for range 1 + r.IntN(4) {
					fs[svc] = append(fs[svc], feats[r.IntN(len(feats))])
				}
			}
		}
		return fs
	}
	shared := 0
	for i := range 500 {
		f, o := set(), set()
		var services []string
		for _, svc := range names {
			if r.IntN(2) == 0 {
				services = append(services, svc)
			}
		}
		want := f.Union(o).Only(services)
		got := f.UnionOnly(o, services)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: %v.UnionOnly(%v, %v) = %v, want %v", i, f, o, services, got, want)
		}
		// decodeInstance uses the set itself for its Only of the same
		// (sorted) services.
		if only := got.Only(services); !reflect.DeepEqual(only, got) {
			t.Fatalf("case %d: %v.Only(%v) = %v, not the set", i, got, services, only)
		}
		for _, svc := range services {
			if _, ok := soleList(f[svc], o[svc]); ok {
				shared++
			}
		}
	}
	if shared < 50 {
		t.Fatalf("only %d lists were shared; both paths must be taken", shared)
	}
}
