package sandboxertest_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/apiclient"
	"github.com/sandboxer/sandboxer/internal/server"
	"github.com/sandboxer/sandboxer/providers/fake"
	"github.com/sandboxer/sandboxer/sandboxertest"
)

const fixture = `
project "shop" {
  services = ["postgres", "redis"]
}

sandbox "agent" {
  project   = project.shop
  on_demand = true
  ttl       = "1h"
}
`

func configDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDefaultKeyIsStableAndValid(t *testing.T) {
	k1, err := sandboxertest.DefaultKey(t)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := sandboxertest.DefaultKey(t)
	if k1 != k2 {
		t.Errorf("keys differ between calls: %s, %s", k1, k2)
	}
	valid := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	if !valid.MatchString(k1) {
		t.Errorf("key %q is not a valid instance key", k1)
	}
	t.Run("a very long subtest name with spaces / slashes and ünïcode that goes past sixty-three characters", func(t *testing.T) {
		k, _ := sandboxertest.DefaultKey(t)
		if !valid.MatchString(k) || k == k1 {
			t.Errorf("subtest key %q: valid=%v, distinct=%v", k, valid.MatchString(k), k != k1)
		}
	})
}

func TestLibraryModeReleasesAtCleanup(t *testing.T) {
	t.Setenv("SANDBOXER_API_URL", "")
	t.Setenv("SANDBOXER_KEEP", "")
	dir := configDir(t)
	p := fake.New(nil)
	var key string
	t.Run("user", func(t *testing.T) {
		sb := sandboxertest.Request(t, "sandbox.agent", sandboxertest.Dir(dir), sandboxertest.Provider(p),
			sandboxertest.Extensions("postgres", "vector"))
		if sb.PostgresURL() == "" || sb.RedisURL() == "" || sb.Reused {
			t.Errorf("got %+v", sb.Sandbox)
		}
		key = sb.Key
		if live := p.Live(); len(live) != 1 {
			t.Errorf("live during the test: %v", live)
		}
	})
	if live := p.Live(); len(live) != 0 {
		t.Errorf("left after the test: %v (key %s)", live, key)
	}
}

// Keep leaves the instance for the next run, which reuses it: the same
// derived key, the same credentials.
func TestKeepThenReuse(t *testing.T) {
	t.Setenv("SANDBOXER_API_URL", "")
	dir := configDir(t)
	p := fake.New(nil)
	var first *sandboxertest.Sandbox
	for run := 0; run < 2; run++ {
		t.Run("run", func(t *testing.T) {
			sb := sandboxertest.Request(t, "sandbox.agent", sandboxertest.Dir(dir), sandboxertest.Provider(p),
				sandboxertest.Key("shared-by-runs"), sandboxertest.Keep())
			if first == nil {
				first = sb
				return
			}
			if !sb.Reused || sb.PostgresURL() != first.PostgresURL() {
				t.Errorf("second run: reused=%v, same credentials=%v", sb.Reused, sb.PostgresURL() == first.PostgresURL())
			}
		})
	}
	if live := p.Live(); len(live) != 1 {
		t.Errorf("kept instances: %v, want one", live)
	}
	lib, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	if ok, err := lib.Release(context.Background(), "sandbox.agent", "shared-by-runs"); !ok || err != nil {
		t.Errorf("release of the kept instance = %v, %v", ok, err)
	}
}

// With SANDBOXER_API_URL set, requests go to the server.
func TestAPIMode(t *testing.T) {
	dir := configDir(t)
	p := fake.New(nil)
	lib, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	h, err := server.New(lib, "tok", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	t.Setenv("SANDBOXER_API_URL", ts.URL)
	t.Setenv("SANDBOXER_API_TOKEN", "tok")
	t.Setenv("SANDBOXER_KEEP", "")
	t.Run("user", func(t *testing.T) {
		// No Dir: the API's configuration is the server's.
		sb := sandboxertest.Request(t, "sandbox.agent")
		if sb.Password("redis") == "" {
			t.Error("no redis password")
		}
		if live := p.Live(); len(live) != 1 {
			t.Errorf("live: %v", live)
		}
	})
	c, err := apiclient.New(ts.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if list, err := c.List(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("after the test the API lists %v (%v), want nothing", list, err)
	}
}

func TestFindConfigDirWalksUp(t *testing.T) {
	dir := configDir(t)
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := sandboxertest.FindConfigDir(sub)
	if err != nil || got != dir {
		t.Errorf("FindConfigDir = %q, %v; want %q", got, err, dir)
	}
}
