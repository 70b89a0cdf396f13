package services_test

import (
	"testing"

	"github.com/sandboxer/sandboxer/services"
)

// The catalogue: every service is found by its name, and what the
// runtimes and the snapshot store ask of it is there and tells services
// apart.
func TestCatalogue(t *testing.T) {
	names := map[string]bool{}
	exts := map[string]string{}
	for _, s := range services.All() {
		n := s.Name()
		if n == "" || names[n] {
			t.Errorf("service name %q empty or twice", n)
		}
		names[n] = true
		if got, ok := services.Lookup(n); !ok || got.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n, got, ok)
		}
		if s.Port() <= 0 || s.Account() == "" {
			t.Errorf("%s: port %d, account %q", n, s.Port(), s.Account())
		}
		f, ok := services.SnapshotFormats(n)
		if !ok || f.Name == "" || f.Ext == "" || f != s.SnapshotFormat() {
			t.Errorf("%s: snapshot format %+v, %v", n, f, ok)
		}
		if other, dup := exts[f.Ext]; dup {
			t.Errorf("%s and %s share the snapshot extension %s", n, other, f.Ext)
		}
		exts[f.Ext] = n
		if p := s.Prober(); p == nil {
			t.Errorf("%s has no prober", n)
		} else {
			p.Close()
		}
	}
	if len(names) < 2 {
		t.Fatalf("the catalogue has %d services", len(names))
	}
	if _, ok := services.Lookup("nosuch"); ok {
		t.Error("Lookup found a service that is not in the catalogue")
	}
	if _, ok := services.SnapshotFormats("nosuch"); ok {
		t.Error("a snapshot format for a service that is not in the catalogue")
	}
}
