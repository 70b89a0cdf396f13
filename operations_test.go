package sandboxer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer"
)

// Levels count each on-demand block's live instances (a declared block is
// not one); Ready reports the state and the configured runtime, both
// answering; Reap of a state with nothing to do does nothing.
func TestLevelsReadyReap(t *testing.T) {
	ctx := context.Background()
	sb, _, _ := open(t, fixture)
	for _, key := range []string{"a", "b"} {
		if _, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	lv, err := sb.Levels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]sandboxer.Level{{Block: "sandbox.agent", Instances: 2}}, lv); d != "" {
		t.Errorf("levels (-want +got):\n%s", d)
	}
	checks := sb.Ready(ctx)
	if len(checks) != 2 || checks[0].Name != "state" || checks[1].Name != "runtime docker" || checks[0].Err != nil || checks[1].Err != nil {
		t.Errorf("ready: %+v", checks)
	}
	rep, err := sb.Reap(ctx)
	if err != nil || len(rep.Expired)+len(rep.Orphans)+len(rep.Databases) != 0 {
		t.Errorf("reap: %+v, %v", rep, err)
	}
}

// A runtime that cannot be reached fails its readiness check with
// engine_unreachable, naming the check; the state's check still passes.
func TestReadyEngineUnreachable(t *testing.T) {
	dir := t.TempDir()
	hcl := "provider \"docker\" {\n  host = \"unix://" + filepath.Join(dir, "no-engine.sock") + "\"\n}\n" + fixture
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	checks := sb.Ready(context.Background())
	if len(checks) != 2 || checks[0].Err != nil || checks[1].Name != "runtime docker" ||
		sandboxer.Classify(checks[1].Err).Code != sandboxer.CodeEngineUnreachable {
		t.Fatalf("ready with no engine: %+v", checks)
	}
}
