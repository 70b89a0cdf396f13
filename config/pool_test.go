package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestPoolDecodes(t *testing.T) {
	cfg, diags := Load("testdata/valid/pool", Input{}, DefaultCatalog())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	got := cfg.Sandboxes["agent"].Pool
	want := &Pool{Size: 4, TTL: 30 * time.Minute}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Pool{}, "DeclRange")); diff != "" {
		t.Errorf("pool (-want +got):\n%s", diff)
	}
	if got.DeclRange.Start.Line != 9 {
		t.Errorf("DeclRange starts on line %d, want 9", got.DeclRange.Start.Line)
	}
}
