package ondemand

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
)

const frameworkConfig = `
project "shop" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["pg_trgm"] }
  database   = "shop_test"

  profile "rag" {
    services   = ["postgres", "redis"]
    extensions = { postgres = ["vector"], redis = ["search"] }
  }

  profile "sql" {
    services = ["postgres"]
  }
}

sandbox "agent" {
  project    = project.shop
  services   = ["redis"]
  on_demand  = true
  env_prefix = "AGENT_"
}
`

func TestRequestProfile(t *testing.T) {
	e := newEnvWith(t, frameworkConfig)
	ctx := context.Background()
	r, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "k", Profile: "rag"})
	if err != nil {
		t.Fatal(err)
	}
	want := &Result{Sandbox: api.Sandbox{Address: `sandbox.agent["k"]`, Generation: 1,
		Services: []string{"postgres", "redis"},
		Features: config.FeatureSet{"postgres": {"pg_trgm", "vector"}, "redis": {"search"}}}}
	if d := cmp.Diff(want, r, cmpResult); d != "" {
		t.Errorf("rag request (-want +got):\n%s", d)
	}
	// A narrower profile is covered by the cache: reused.
	r2, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "k", Profile: "sql"})
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Reused || r2.Generation != 1 {
		t.Errorf("sql profile after rag: reused=%v generation=%d, want reused generation 1", r2.Reused, r2.Generation)
	}
	_, err = e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "k", Profile: "nope"})
	if !isKind(err, NotFound) || !strings.Contains(err.Error(), "declared: rag, sql") {
		t.Errorf("unknown profile: %v", err)
	}
}

func TestRequestPrefixAndDatabase(t *testing.T) {
	e := newEnvWith(t, frameworkConfig)
	ctx := context.Background()
	r, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	// The block's env_prefix names the variables; the project's database
	// is what the role owns.
	if r.Env["AGENT_POSTGRES_DB"] != "shop_test" || r.Env["AGENT_REDIS_URL"] == "" || r.Prefix != "AGENT_" {
		t.Errorf("env = %v (prefix %q), want AGENT_* names and database shop_test", keys(r.Env), r.Prefix)
	}
	r, err = e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "k", Prefix: "ROBOCO_TEST_"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Reused || r.Env["ROBOCO_TEST_POSTGRES_URL"] == "" || !strings.HasSuffix(strings.SplitN(r.Env["ROBOCO_TEST_POSTGRES_URL"], "?", 2)[0], "/shop_test") {
		t.Errorf("per-call prefix: reused=%v env %v", r.Reused, keys(r.Env))
	}
	for _, bad := range []string{"1X", "A B", "A;rm"} {
		_, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "k", Prefix: bad})
		if !isKind(err, Invalid) {
			t.Errorf("prefix %q: %v, want Invalid", bad, err)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return config.SortedUnique(out)
}
