package ondemand

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
)

func TestRequestProvisionsThenReuses(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r1, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "dev-7"})
	if err != nil {
		t.Fatal(err)
	}
	// First provision: the project's full opted-in set, standing features.
	want := &Result{Sandbox: api.Sandbox{Address: `sandbox.agent["dev-7"]`, Generation: 1,
		Services: []string{"postgres", "redis"},
		Features: config.FeatureSet{"postgres": {"pg_trgm"}, "redis": {}}}}
	if d := cmp.Diff(want, r1, cmpResult); d != "" {
		t.Errorf("first request (-want +got):\n%s", d)
	}
	if r1.ExpiresAt == nil || !r1.ExpiresAt.Equal(e.now.Add(time.Hour)) {
		t.Errorf("expires_at = %v, want now+1h", r1.ExpiresAt)
	}
	if r1.Record == nil || !r1.Record.OnDemand {
		t.Error("record is not marked on-demand")
	}
	// The same address spelled with its key; a subset of what is cached.
	r2, err := e.b.Request(ctx, Request{Address: `sandbox.agent["dev-7"]`, Extensions: map[string][]string{"postgres": {}}})
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Reused || r2.Generation != 1 || r2.Env["SANDBOXER_REDIS_PASSWORD"] != r1.Env["SANDBOXER_REDIS_PASSWORD"] {
		t.Errorf("second request: reused=%v gen=%d, same credentials=%v", r2.Reused, r2.Generation,
			r2.Env["SANDBOXER_REDIS_PASSWORD"] == r1.Env["SANDBOXER_REDIS_PASSWORD"])
	}
	if got := e.prov.log(); !cmp.Equal(got, []string{
		`create sandbox.agent["dev-7"]#1 postgres[pg_trgm] redis[]`,
		`probe sandbox.agent["dev-7"]#1`,
	}) {
		t.Errorf("provider calls: %q", got)
	}
	if d := cmp.Diff([]string{
		`provisioned sandbox.agent["dev-7"] g1 new`,
		`reused sandbox.agent["dev-7"] g1 cached_superset`,
	}, e.ev.types()); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

var cmpResult = cmp.FilterPath(func(p cmp.Path) bool {
	switch p.Last().String() {
	case ".Env", ".Record", ".ExpiresAt", ".AvailableExtensions", ".ExtensionVersions", ".Prefix":
		return true
	}
	return false
}, cmp.Ignore())

func TestRequestSupersetReplacesNewBeforeOld(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r1, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "a"})
	if err != nil {
		t.Fatal(err)
	}
	e.prov.reset()
	r2, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "a", Extensions: map[string][]string{"postgres": {"vector"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Reused || r2.Generation != 2 {
		t.Errorf("reused=%v generation=%d, want a replace to generation 2", r2.Reused, r2.Generation)
	}
	if d := cmp.Diff(config.FeatureSet{"postgres": {"pg_trgm", "vector"}, "redis": {}}, config.FeatureSet(r2.Features)); d != "" {
		t.Errorf("features (-want +got):\n%s", d)
	}
	if r2.Env["SANDBOXER_POSTGRES_PASSWORD"] == r1.Env["SANDBOXER_POSTGRES_PASSWORD"] {
		t.Error("credentials did not rotate")
	}
	if d := cmp.Diff([]string{
		`create sandbox.agent["a"]#2 postgres[pg_trgm,vector] redis[]`,
		`delete sandbox.agent["a"]#1`,
	}, e.prov.log()); d != "" {
		t.Errorf("provider calls (-want +got):\n%s", d)
	}
}

func TestRequestDeadIsEvictedAndReprovisioned(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.b.Request(ctx, Request{Address: "sandbox.kv", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	e.prov.dead[`sandbox.kv["k"]#1`] = true
	e.prov.reset()
	r, err := e.b.Request(ctx, Request{Address: "sandbox.kv", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Reused || r.Generation != 2 {
		t.Errorf("reused=%v generation=%d", r.Reused, r.Generation)
	}
	if d := cmp.Diff([]string{
		`probe sandbox.kv["k"]#1`,
		`delete sandbox.kv["k"]#1`,
		`create sandbox.kv["k"]#2 redis[]`,
	}, e.prov.log()); d != "" {
		t.Errorf("provider calls (-want +got):\n%s", d)
	}
	if evs := e.ev.types(); evs[len(evs)-1] != `provisioned sandbox.kv["k"] g2 dead` {
		t.Errorf("last event %q", evs[len(evs)-1])
	}
}

func TestRequestExpiredIsReplaced(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "x", TTL: "2m"}); err != nil {
		t.Fatal(err)
	}
	e.advance(3 * time.Minute)
	r, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Reused || r.Generation != 2 || !r.ExpiresAt.Equal(e.now.Add(time.Hour)) {
		t.Errorf("reused=%v generation=%d expires=%v", r.Reused, r.Generation, r.ExpiresAt)
	}
}

func TestRequestRefusals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "keep"}); err != nil {
		t.Fatal(err)
	}
	e.prov.reset()
	long := strings.Repeat("k", 64)
	for _, tc := range []struct {
		name string
		req  Request
		kind Kind
		msg  string
	}{
		{"no key", Request{Address: "sandbox.agent"}, Invalid, `needs a key`},
		{"key twice", Request{Address: `sandbox.agent["a"]`, Key: "b"}, Invalid, `has key "a" but --key says "b"`},
		{"key with a quote", Request{Address: "sandbox.agent", Key: `a'b`}, Invalid, `invalid key "a'b"`},
		{"key with a space", Request{Address: "sandbox.agent", Key: "a b"}, Invalid, `invalid key`},
		{"key with a slash", Request{Address: "sandbox.agent", Key: "../x"}, Invalid, `invalid key`},
		{"key too long", Request{Address: "sandbox.agent", Key: long}, Invalid, `1 to 63 characters`},
		{"key starting with a dash", Request{Address: "sandbox.agent", Key: "-x"}, Invalid, `starting with a letter or digit`},
		{"bad address", Request{Address: "agent", Key: "k"}, Invalid, `must start with "sandbox."`},
		{"unknown block", Request{Address: "sandbox.nope", Key: "k"}, NotFound, `no sandbox block "nope" in the configuration; on-demand blocks: sandbox.agent, sandbox.kv`},
		{"declared block", Request{Address: "sandbox.dev", Key: "k"}, Invalid, `not an on-demand block`},
		{"declared block without a key", Request{Address: "sandbox.dev"}, Invalid, `not an on-demand block`},
		{"unallowed feature", Request{Address: "sandbox.agent", Key: "keep", Extensions: map[string][]string{"postgres": {"plpython3u"}}}, NotAllowed, `allowed: btree_gin, btree_gist, citext`},
		{"unknown service", Request{Address: "sandbox.agent", Key: "keep", Extensions: map[string][]string{"mongodb": nil}}, NotAllowed, `unknown service "mongodb"; known services: mysql, postgres, redis, valkey`},
		{"service not opted in", Request{Address: "sandbox.kv", Key: "k", Extensions: map[string][]string{"postgres": {"vector"}}}, NotAllowed, `project "cache" does not opt in "postgres" (it opts in: redis)`},
		{"negative ttl", Request{Address: "sandbox.agent", Key: "k", TTL: "-1h"}, Invalid, `must not be negative`},
		{"zero ttl", Request{Address: "sandbox.agent", Key: "k", TTL: "0"}, Invalid, `shorter than the minimum of 1m`},
		{"zero seconds ttl", Request{Address: "sandbox.agent", Key: "k", TTL: "0s"}, Invalid, `shorter than the minimum of 1m`},
		{"expired at once ttl", Request{Address: "sandbox.agent", Key: "k", TTL: "1ns"}, Invalid, `shorter than the minimum of 1m`},
		{"absurd ttl", Request{Address: "sandbox.agent", Key: "k", TTL: "100d"}, Invalid, `longer than the maximum of 30d`},
		{"garbage ttl", Request{Address: "sandbox.agent", Key: "k", TTL: "soon"}, Invalid, `invalid ttl "soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.b.Request(ctx, tc.req)
			var re *Error
			if !errors.As(err, &re) || re.Kind != tc.kind || !strings.Contains(re.Msg, tc.msg) {
				t.Fatalf("got %v, want kind %d containing %q", err, tc.kind, tc.msg)
			}
		})
	}
	if got := e.prov.log(); len(got) != 0 {
		t.Errorf("refused requests reached the provider: %q", got)
	}
	rec, err := e.store.Get(ctx, `sandbox.agent["keep"]`)
	if err != nil || rec == nil || rec.Generation != 1 {
		t.Errorf("the existing instance changed: %v %v", rec, err)
	}
}

func TestConcurrentRequestsProvisionOnce(t *testing.T) {
	e := newEnv(t)
	e.prov.delay = 50 * time.Millisecond
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([]*Result, 8)
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.b.Request(ctx, Request{Address: "sandbox.kv", Key: "shared"})
		}()
	}
	wg.Wait()
	fresh := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !r.Reused {
			fresh++
		}
		if r.Env["SANDBOXER_REDIS_URL"] != results[0].Env["SANDBOXER_REDIS_URL"] {
			t.Errorf("request %d got other credentials", i)
		}
	}
	if e.prov.creates != 1 || fresh != 1 {
		t.Errorf("%d creates, %d fresh results; want 1 and 1", e.prov.creates, fresh)
	}
}

func TestReleaseAndExtend(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Releasing what is not there is a no-op that does not touch the engine.
	if ok, err := e.b.Release(ctx, "sandbox.agent", "never"); ok || err != nil {
		t.Fatalf("release of nothing: %v %v", ok, err)
	}
	if _, err := e.b.Extend(ctx, "sandbox.agent", "never", "1h"); !isKind(err, NotFound) {
		t.Fatalf("extend of nothing: %v", err)
	}
	if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "r", TTL: "10m"}); err != nil {
		t.Fatal(err)
	}
	e.advance(5 * time.Minute)
	rec, err := e.b.Extend(ctx, `sandbox.agent["r"]`, "", "2h")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.ExpiresAt.Equal(e.now.Add(2 * time.Hour)) {
		t.Errorf("expires_at %v, want now+2h", rec.ExpiresAt)
	}
	if _, err := e.b.Extend(ctx, "sandbox.agent", "r", "31d"); !isKind(err, Invalid) {
		t.Errorf("absurd extend: %v", err)
	}
	e.advance(3 * time.Hour)
	if _, err := e.b.Extend(ctx, "sandbox.agent", "r", "1h"); !isKind(err, Conflict) {
		t.Errorf("extend of an expired instance: %v", err)
	}
	e.prov.reset()
	if ok, err := e.b.Release(ctx, "sandbox.agent", "r"); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if d := cmp.Diff([]string{`delete sandbox.agent["r"]#1`}, e.prov.log()); d != "" {
		t.Errorf("provider calls (-want +got):\n%s", d)
	}
	if ok, err := e.b.Release(ctx, "sandbox.agent", "r"); ok || err != nil {
		t.Fatalf("second release: %v %v", ok, err)
	}
	recs, _, err := e.b.List(ctx)
	if err != nil || len(recs) != 0 {
		t.Errorf("list after release: %v %v", recs, err)
	}
}

func isKind(err error, k Kind) bool {
	var re *Error
	return errors.As(err, &re) && re.Kind == k
}

// TestDifferentInstancesDoNotWait: instance locks are per address, so
// four provisions of different keys overlap instead of queueing.
func TestDifferentInstancesDoNotWait(t *testing.T) {
	e := newEnv(t)
	// Long enough that a loaded machine's state writes (fsyncs of tens
	// of ms) do not count beside it: in series the four take 4 s.
	e.prov.delay = time.Second
	ctx := context.Background()
	if _, err := e.store.EnsureLineage(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, k := range []string{"a", "b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.b.Request(ctx, Request{Address: "sandbox.kv", Key: k}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("four 1 s provisions of different instances took %s: they waited for each other", el)
	}
}

func TestRequestFailureRecordsNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.prov.failNew = errors.New("redis: container exited (exit code 1)")
	if _, err := e.b.Request(ctx, Request{Address: "sandbox.kv", Key: "f"}); err == nil || !strings.Contains(err.Error(), "container exited") {
		t.Fatalf("got %v", err)
	}
	if rec, err := e.store.Get(ctx, `sandbox.kv["f"]`); rec != nil || err != nil {
		t.Errorf("a failed request left a record: %v %v", rec, err)
	}
	if got := e.ev.types(); len(got) != 1 || !strings.HasPrefix(got[0], `failed sandbox.kv["f"] g1 `) {
		t.Errorf("events %q", got)
	}
}

func TestRequestBusyInstance(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	unlock, err := e.store.LockInstance(ctx, `sandbox.kv["b"]`, "request", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	e.b.LockTimeout = 50 * time.Millisecond
	_, err = e.b.Request(ctx, Request{Address: "sandbox.kv", Key: "b"})
	if !isKind(err, Busy) || !strings.Contains(err.Error(), "is locked by pid") {
		t.Fatalf("got %v", err)
	}
}
