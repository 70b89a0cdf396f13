package apply_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/providers/docker"
	"github.com/sandboxer/sandboxer/state"
)

// Apply-level failures on the real engine that the CLI cannot provoke
// without a product knob: a service that is not ready in time and a
// container that exits while starting. Both must fail their instance with
// a clear error, record nothing and leave nothing labelled.

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// dockerFixture is an executor over the local engine and a real state
// store; everything labelled with its lineage is removed when the test
// ends, whatever happened.
type dockerFixture struct {
	exec  *apply.Executor
	prov  *docker.Provider
	store *state.Store
	hook  *hookLog
}

func newDockerFixture(t *testing.T, cfg *config.Provider) *dockerFixture {
	t.Helper()
	testenv.RequireDocker(t)
	ctx := context.Background()
	prov, err := docker.New(ctx, cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatalf("docker provider (these tests need the engine and the local images): %v", err)
	}
	t.Cleanup(func() { prov.Close() })
	if _, err := prov.Check(ctx, []plan.ImageUse{{Service: "postgres"}, {Service: "redis"}}); err != nil {
		t.Fatalf("test images missing (run `make images`): %v", err)
	}
	st := state.Open(filepath.Join(t.TempDir(), "state.db"))
	lineage, err := st.EnsureLineage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		left, err := prov.ListManaged(cctx, lineage)
		if err == nil {
			err = prov.DeleteManaged(cctx, left)
		}
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	h := &hookLog{}
	return &dockerFixture{prov: prov, store: st, hook: h,
		exec: &apply.Executor{Provider: prov, Store: st, Hook: h, Lineage: lineage, Parallelism: 2}}
}

func (f *dockerFixture) assertNothingLeft(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	left, err := f.prov.ListManaged(ctx, f.exec.Lineage)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range left {
		t.Errorf("left behind: %s %s (%s)", m.Kind, m.Name, m.Address)
	}
	snap, err := f.store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for a := range snap.Records {
		t.Errorf("recorded in state: %s", a)
	}
}

func createOf(name string, fs config.FeatureSet) *plan.Change {
	return &plan.Change{Addr: addr(name), Project: "p", Action: plan.Create,
		After: &plan.Sandbox{Services: fs.Services(), Features: fs}}
}

func TestApplyDockerStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features config.FeatureSet
		ready    time.Duration
		want     []string
	}{
		{
			// The module file is not there: redis-server exits at once,
			// and apply must not wait for the readiness deadline.
			name: "crash", features: config.FeatureSet{"redis": {"search"}},
			want: []string{"sandbox.crash: create:", "container exited", "/nonexistent/redisearch.so", "container log"},
		},
		{
			// initdb alone takes longer than this (scaled by the
			// machine's load, up to 5×: still far too short); the
			// fixture turns templates off, from which a quiet machine
			// may start PostgreSQL within it.
			name: "slow", features: config.FeatureSet{"postgres": {}}, ready: 50 * time.Millisecond,
			want: []string{"sandbox.slow: create:", "not ready after", "try again"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newDockerFixture(t, &config.Provider{
				Images: map[string]config.Image{
					"postgres": {Ref: envOr("SANDBOXER_TEST_POSTGRES_IMAGE", "sandboxer.local/postgres:17")},
					"redis": {Ref: envOr("SANDBOXER_TEST_REDIS_IMAGE", "sandboxer.local/redis:7"),
						Modules: map[string]string{"search": "/nonexistent/redisearch.so"}},
				},
				MemoryMB: 512, PidsLimit: 512, NoTemplate: true,
			})
			f.prov.ReadyTimeout = tc.ready
			start := time.Now()
			res, err := f.exec.Apply(context.Background(), nil, &plan.Plan{Changes: []*plan.Change{createOf(tc.name, tc.features)}})
			took := time.Since(start)
			t.Logf("apply failed after %s: %v", took.Round(time.Millisecond), err)
			var ie *apply.InstanceError
			if !errors.As(err, &ie) || ie.Addr != "sandbox."+tc.name {
				t.Fatalf("got %v, want an InstanceError for sandbox.%s", err, tc.name)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q", w)
				}
			}
			if tc.name == "slow" && !errors.Is(err, apply.ErrTransient) {
				t.Errorf("a readiness timeout is not apply.ErrTransient (answered unavailable): %v", err)
			}
			if took > 30*time.Second {
				t.Errorf("failing took %s", took)
			}
			if res != (apply.Result{}) {
				t.Errorf("result %+v, want nothing done", res)
			}
			if diff := cmp.Diff([]string{"pre sandbox." + tc.name, "post sandbox." + tc.name + " 0 true"}, f.hook.list()); diff != "" {
				t.Errorf("hook (-want +got):\n%s", diff)
			}
			f.assertNothingLeft(t)
		})
	}
}
