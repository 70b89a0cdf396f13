package sandboxer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/providers/fake"
	"github.com/sandboxer/sandboxer/state"
)

const fixture = `
project "shop" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["pg_trgm"] }
}

sandbox "agent" {
  project   = project.shop
  on_demand = true
  ttl       = "1h"
}

sandbox "ci" {
  project  = project.shop
  services = ["postgres"]
}
`

// open writes the fixture into a fresh directory and opens it with a fake
// engine.
func open(t *testing.T, hcl string) (*sandboxer.Sandboxer, *fake.Provider, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	p := fake.New(nil)
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{Provider: p, Environ: []string{}, LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, p, dir
}

func TestRequestReuseExtendListRelease(t *testing.T) {
	ctx := context.Background()
	sb, p, dir := open(t, fixture)
	s1, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "dev-7"})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Reused || s1.Generation != 1 || s1.Address != `sandbox.agent["dev-7"]` {
		t.Errorf("first request: reused=%v generation=%d address=%s", s1.Reused, s1.Generation, s1.Address)
	}
	if d := cmp.Diff(map[string][]string{"postgres": {"pg_trgm"}, "redis": {}}, s1.Features); d != "" {
		t.Errorf("features (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(s1.URL("postgres"), "postgres://app:") || s1.Password("redis") == "" || s1.Port("redis") == 0 {
		t.Errorf("accessors: url set=%v redis password set=%v port=%d", s1.URL("postgres") != "", s1.Password("redis") != "", s1.Port("redis"))
	}
	if got := filepath.Join(dir, ".sandboxer", "state.db"); sb.StatePath() != got {
		t.Errorf("state path %s, want the CLI's default %s", sb.StatePath(), got)
	}

	s2, err := sb.Request(ctx, `sandbox.agent["dev-7"]`, sandboxer.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !s2.Reused || s2.URL("postgres") != s1.URL("postgres") {
		t.Errorf("second request: reused=%v, same credentials=%v", s2.Reused, s2.URL("postgres") == s1.URL("postgres"))
	}

	// A feature the cache lacks replaces it with rotated credentials.
	s3, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "dev-7", Extensions: map[string][]string{"postgres": {"vector"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s3.Reused || s3.Generation != 2 || s3.URL("postgres") == s1.URL("postgres") {
		t.Errorf("superset request: reused=%v generation=%d rotated=%v", s3.Reused, s3.Generation, s3.URL("postgres") != s1.URL("postgres"))
	}
	if live := p.Live(); len(live) != 1 {
		t.Errorf("live instances after a replace: %v, want the new one only", live)
	}

	in, err := sb.Extend(ctx, "sandbox.agent", "dev-7", "3h")
	if err != nil {
		t.Fatal(err)
	}
	if in.ExpiresAt == nil || time.Until(*in.ExpiresAt) < 2*time.Hour {
		t.Errorf("extend: expires_at %v, want about 3h from now", in.ExpiresAt)
	}
	list, err := sb.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Address != `sandbox.agent["dev-7"]` || list[0].Endpoints["postgres"] == "" {
		t.Errorf("list = %+v", list)
	}

	released, err := sb.Release(ctx, "sandbox.agent", "dev-7")
	if err != nil || !released {
		t.Fatalf("release = %v, %v", released, err)
	}
	released, err = sb.Release(ctx, "sandbox.agent", "dev-7")
	if err != nil || released {
		t.Errorf("second release = %v, %v; want a no-op", released, err)
	}
	if live := p.Live(); len(live) != 0 {
		t.Errorf("left after release: %v", live)
	}
}

func TestTypedErrors(t *testing.T) {
	ctx := context.Background()
	sb, _, _ := open(t, fixture)
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"unknown block", func() error {
			_, err := sb.Request(ctx, "sandbox.nope", sandboxer.RequestOptions{Key: "k"})
			return err
		}, sandboxer.ErrNotFound},
		{"feature off the allowlist", func() error {
			_, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "k", Extensions: map[string][]string{"postgres": {"plpython3u"}}})
			return err
		}, sandboxer.ErrNotAllowed},
		{"bad key", func() error {
			_, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "no spaces"})
			return err
		}, sandboxer.ErrInvalid},
		{"extend of nothing", func() error {
			_, err := sb.Extend(ctx, "sandbox.agent", "missing", "1h")
			return err
		}, sandboxer.ErrNotFound},
		{"snapshot of nothing", func() error {
			_, err := sb.Snapshot(ctx, `sandbox.agent["missing"]`, "base")
			return err
		}, sandboxer.ErrNotFound},
		{"a snapshot name that is a path", func() error {
			_, err := sb.Snapshot(ctx, "sandbox.ci", "../x")
			return err
		}, sandboxer.ErrInvalid},
		{"restore of a snapshot that does not exist", func() error {
			if _, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "live"}); err != nil {
				return err
			}
			_, err := sb.Restore(ctx, `sandbox.agent["live"]`, "never-taken")
			return err
		}, sandboxer.ErrNotFound},
		{"bad target", func() error {
			_, err := sb.Plan(ctx, sandboxer.PlanOptions{Targets: []string{"nonsense["}})
			return err
		}, sandboxer.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want errors.Is %v", err, tc.want)
			}
			var e *sandboxer.Error
			if !errors.As(err, &e) || e.Message == "" {
				t.Errorf("errors.As *sandboxer.Error failed for %v", err)
			}
		})
	}
	// The allowlist travels with a NotAllowed error.
	_, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "k", Extensions: map[string][]string{"postgres": {"plpython3u"}}})
	var e *sandboxer.Error
	if errors.As(err, &e) && !containsStr(e.Allowed, "vector") {
		t.Errorf("allowed = %v, want the postgres allowlist", e.Allowed)
	}
}

func TestInstanceLockBusy(t *testing.T) {
	ctx := context.Background()
	sb, _, _ := open(t, fixture)
	unlock, err := state.Open(sb.StatePath()).LockInstance(ctx, `sandbox.agent["held"]`, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_, err = sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "held"})
	if !errors.Is(err, sandboxer.ErrBusy) {
		t.Errorf("request of a locked instance = %v, want ErrBusy", err)
	}
	// The data calls too: busy, not an internal error.
	for name, call := range map[string]func() error{
		"snapshot": func() error { _, err := sb.Snapshot(ctx, `sandbox.agent["held"]`, "s1"); return err },
		"restore":  func() error { _, err := sb.Restore(ctx, `sandbox.agent["held"]`, "s1"); return err },
		"reset":    func() error { _, err := sb.Reset(ctx, `sandbox.agent["held"]`, "s1"); return err },
	} {
		if err := call(); !errors.Is(err, sandboxer.ErrBusy) || sandboxer.Classify(err).Code != sandboxer.CodeBusy {
			t.Errorf("%s of a locked instance = %v, want ErrBusy", name, err)
		}
	}
}

func TestConfigErrorHasLocation(t *testing.T) {
	dir := t.TempDir()
	bad := "project \"shop\" {\n  services = [\"postgres\"]\n  extensions = { postgres = [\"plpython3u\"] }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{Provider: fake.New(nil)})
	var ce *sandboxer.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, sandboxer.ErrInvalid) {
		t.Fatalf("Open = %v, want a *ConfigError matching ErrInvalid", err)
	}
	if !strings.Contains(err.Error(), "main.sbx.hcl:3,") {
		t.Errorf("error %q does not name main.sbx.hcl:3", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, ".sandboxer")); statErr == nil {
		t.Error("a broken configuration created .sandboxer")
	}
}

func TestPlanApplyIsDataAndRefusesStalePlans(t *testing.T) {
	ctx := context.Background()
	sb, p, _ := open(t, fixture)
	pl, err := sb.Plan(ctx, sandboxer.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Changes) != 1 || pl.Changes[0].Addr.String() != "sandbox.ci" || pl.Changes[0].Action != plan.Create || pl.Changes[0].Reason != plan.ReasonNew {
		t.Fatalf("plan = %+v, want one create of sandbox.ci (on-demand blocks are not planned)", pl.Changes)
	}
	res, err := sb.Apply(ctx, pl, sandboxer.ApplyOptions{})
	if err != nil || res.Created != 1 {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	if live := p.Live(); len(live) != 1 || live[0] != "sandbox.ci" {
		t.Errorf("live = %v", live)
	}
	// Applying the same plan again: state moved on since it was made.
	if _, err := sb.Apply(ctx, pl, sandboxer.ApplyOptions{}); !errors.Is(err, sandboxer.ErrConflict) {
		t.Errorf("second apply of the same plan = %v, want ErrConflict", err)
	}
	again, err := sb.Plan(ctx, sandboxer.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.HasChanges() || again.Changes[0].Action != plan.NoOp {
		t.Errorf("plan after apply = %+v, want one reuse", again.Changes)
	}
	// A dead sandbox is seen by refresh and planned as create (dead).
	p.Kill("sandbox.ci")
	dead, err := sb.Plan(ctx, sandboxer.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dead.Changes[0].Action != plan.Create || dead.Changes[0].Reason != plan.ReasonDead {
		t.Errorf("after kill: %v %v, want create (dead)", dead.Changes[0].Action, dead.Changes[0].Reason)
	}
	destroy, err := sb.Plan(ctx, sandboxer.PlanOptions{Destroy: true, NoRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := sb.Apply(ctx, destroy, sandboxer.ApplyOptions{}); err != nil || res.Destroyed != 1 {
		t.Errorf("destroy = %+v, %v", res, err)
	}
}

func TestEngineUnreachable(t *testing.T) {
	dir := t.TempDir()
	hcl := "provider \"docker\" {\n  host = \"unix:///nonexistent/docker.sock\"\n}\n" + fixture
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	_, err = sb.Request(context.Background(), "sandbox.agent", sandboxer.RequestOptions{Key: "k"})
	if !errors.Is(err, sandboxer.ErrEngineUnreachable) {
		t.Errorf("request without an engine = %v, want ErrEngineUnreachable", err)
	}
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
