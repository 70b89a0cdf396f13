package sandboxer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/providers/fake"
	"github.com/sandboxer/sandboxer/state"
)

const twoRuntimes = `
provider "docker" {}
provider "kubernetes" {}
project "p" { services = ["postgres"] }
sandbox "d" { project = project.p }
sandbox "k" {
  project = project.p
  runtime = "%s"
}
`

// One configuration, two runtimes: every call reaches the runtime its
// sandbox is on, and moving a sandbox between them replaces it there.
func TestRuntimesAreRouted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(runtime string) {
		t.Helper()
		src := []byte(fmt.Sprintf(twoRuntimes, runtime))
		if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	engines := map[string]*fake.Provider{config.RuntimeDocker: fake.New(nil), config.RuntimeKubernetes: fake.New(nil)}
	opts := sandboxer.Options{Environ: []string{}, LockTimeout: 200 * time.Millisecond,
		NewProvider: func(ctx context.Context, pc *config.Provider, cat *config.Catalog) (apply.Provider, error) {
			return engines[pc.Runtime], nil
		}}
	openCfg := func() *sandboxer.Sandboxer {
		t.Helper()
		sb, err := sandboxer.Open(ctx, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		return sb
	}
	live := func(rt string) []string { return engines[rt].Live() }

	write(config.RuntimeKubernetes)
	sb := openCfg()
	if _, _, err := sb.PlanAndApply(ctx, sandboxer.PlanOptions{}, sandboxer.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, k := live(config.RuntimeDocker), live(config.RuntimeKubernetes); len(d) != 1 || d[0] != "sandbox.d" || len(k) != 1 || k[0] != "sandbox.k" {
		t.Fatalf("docker runs %v, kubernetes %v; want sandbox.d and sandbox.k", d, k)
	}
	snap, err := sb.Store().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Records["sandbox.k"].RuntimeOf(); got != state.RuntimeKubernetes {
		t.Errorf("sandbox.k recorded on %q", got)
	}
	if got := snap.Records["sandbox.d"].Resources.Runtime; got != "" {
		t.Errorf("sandbox.d recorded runtime %q, want none (docker records read as before)", got)
	}
	// Refresh probes each on its own runtime: both alive, nothing to do.
	again, err := sb.Plan(ctx, sandboxer.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.HasChanges() {
		t.Fatalf("plan after apply has changes: %+v", again.Changes)
	}
	// A dead pod is seen by the kubernetes runtime's probe.
	engines[config.RuntimeKubernetes].Kill("sandbox.k")
	dead, err := sb.Plan(ctx, sandboxer.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range dead.Changes {
		if c.Addr.String() == "sandbox.k" && c.Reason != plan.ReasonDead {
			t.Errorf("killed sandbox.k planned %s", c.Reason)
		}
	}
	if _, _, err := sb.PlanAndApply(ctx, sandboxer.PlanOptions{}, sandboxer.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}

	// Moving sandbox.k to docker: runtime_changed, new on docker, old gone.
	write(config.RuntimeDocker)
	sb = openCfg()
	moved, err := sb.Plan(ctx, sandboxer.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reason plan.Reason
	for _, c := range moved.Changes {
		if c.Addr.String() == "sandbox.k" {
			reason = c.Reason
		}
	}
	if reason != plan.ReasonRuntimeChanged {
		t.Fatalf("sandbox.k planned %q, want runtime_changed", reason)
	}
	if _, err := sb.Apply(ctx, moved, sandboxer.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, k := live(config.RuntimeDocker), live(config.RuntimeKubernetes); len(d) != 2 || len(k) != 0 {
		t.Errorf("after the move docker runs %v, kubernetes %v", d, k)
	}
	// The orphan sweep asks both runtimes (the kubernetes block is still
	// declared) and each inventory lists only its own.
	if _, err := sb.Reap(ctx); err != nil {
		t.Fatal(err)
	}
}
