package sandboxer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/providers/fake"
	"github.com/sandboxer/sandboxer/state"
)

// The library reads the configuration's backend block as the CLI does
// (one resolution, sandboxer.ChooseBackend): a file block's path holds
// the state; a changed block is refused with what to run.
func TestOpenReadsTheBackendBlock(t *testing.T) {
	dir := t.TempDir()
	write := func(backend string) {
		src := backend + "\nproject \"p\" {\n  services = [\"postgres\"]\n}\n\nsandbox \"ci\" {\n  project = project.p\n}\n"
		if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sandboxer {\n  backend \"file\" {\n    path = \"st/sbx.db\"\n  }\n}\n")
	ctx := context.Background()
	s, err := sandboxer.Open(ctx, dir, sandboxer.Options{Provider: fake.New(nil), Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PlanAndApply(ctx, sandboxer.PlanOptions{}, sandboxer.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if want := filepath.Join(dir, "st", "sbx.db"); s.StatePath() != want {
		t.Errorf("StatePath = %s, want %s", s.StatePath(), want)
	}
	snap, err := state.Open(filepath.Join(dir, "st", "sbx.db")).Snapshot(ctx)
	if err != nil || len(snap.Records) != 1 {
		t.Fatalf("the block's state file holds %v (%v), want sandbox.ci", snap, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sandboxer", "state.db")); err == nil {
		t.Error("the default state file was written too")
	}

	// The block's path changes: the state is still at the old one.
	write("sandboxer {\n  backend \"file\" {\n    path = \"other.db\"\n  }\n}\n")
	s, err = sandboxer.Open(ctx, dir, sandboxer.Options{Provider: fake.New(nil), Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Plan(ctx, sandboxer.PlanOptions{NoRefresh: true})
	var changed *sandboxer.BackendChangedError
	if !errors.As(err, &changed) || changed.FromPath != filepath.Join(dir, "st", "sbx.db") {
		t.Fatalf("Plan after the block changed: %v, want a BackendChangedError from st/sbx.db", err)
	}

	// The variable wins over the block, without the check.
	s2, err := sandboxer.Open(ctx, dir, sandboxer.Options{Provider: fake.New(nil), Environ: []string{sandboxer.EnvBackendURL + "=file"}, StatePath: "st/sbx.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Plan(ctx, sandboxer.PlanOptions{NoRefresh: true}); err != nil {
		t.Fatalf("Plan with the state named explicitly: %v", err)
	}
}
