package apiclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apiclient"
	"github.com/sandboxer/sandboxer/internal/server"
	"github.com/sandboxer/sandboxer/providers/fake"
	"github.com/sandboxer/sandboxer/state"
)

const fixture = `
project "shop" {
  services = ["postgres", "redis"]

  profile "rag" {
    extensions = { postgres = ["vector"], redis = ["search"] }
  }
}

sandbox "agent" {
  project   = project.shop
  on_demand = true
  ttl       = "1h"
}
`

const token = "test-token-5f1c"

// serve runs the real API server, over the library's broker and a fake
// engine, on a loopback port.
func serve(t *testing.T) (*apiclient.Client, *sandboxer.Sandboxer, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{Provider: fake.New(nil), Environ: []string{}, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	h, err := server.New(sb, token, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c, err := apiclient.New(ts.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	return c, sb, ts.URL
}

func TestLifecycleOverHTTP(t *testing.T) {
	ctx := context.Background()
	c, _, _ := serve(t)
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	s1, err := c.Request(ctx, api.RequestBody{Address: "sandbox.agent", Key: "dev-7", Extensions: map[string][]string{"postgres": {"vector"}}, TTL: "2h"})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Reused || s1.Generation != 1 || !slices.Equal(s1.Features["postgres"], []string{"vector"}) {
		t.Errorf("request: %+v", s1)
	}
	if !strings.HasPrefix(s1.URL("redis"), "redis://") || s1.Database("postgres") != "app" {
		t.Errorf("credentials: redis url set=%v db=%q", s1.URL("redis") != "", s1.Database("postgres"))
	}
	if s1.ExpiresAt == nil || time.Until(*s1.ExpiresAt) < 110*time.Minute {
		t.Errorf("expires_at %v, want about 2h from now", s1.ExpiresAt)
	}
	s2, err := c.Request(ctx, api.RequestBody{Address: `sandbox.agent["dev-7"]`})
	if err != nil {
		t.Fatal(err)
	}
	if !s2.Reused || s2.URL("postgres") != s1.URL("postgres") {
		t.Errorf("second request: reused=%v same credentials=%v", s2.Reused, s2.URL("postgres") == s1.URL("postgres"))
	}
	in, err := c.Extend(ctx, "sandbox.agent", "dev-7", "5h")
	if err != nil {
		t.Fatal(err)
	}
	if in.ExpiresAt == nil || time.Until(*in.ExpiresAt) < 4*time.Hour {
		t.Errorf("extend: %v", in.ExpiresAt)
	}
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Address != `sandbox.agent["dev-7"]` || !list[0].OnDemand {
		t.Errorf("list: %+v", list)
	}
	if ok, err := c.Release(ctx, "sandbox.agent", "dev-7"); err != nil || !ok {
		t.Errorf("release = %v, %v", ok, err)
	}
	if ok, err := c.Release(ctx, "sandbox.agent", "dev-7"); err != nil || ok {
		t.Errorf("second release = %v, %v; want a no-op", ok, err)
	}
}

// Profile and prefix travel in the body; the accessors read prefixed
// names too.
func TestProfileAndPrefixOverHTTP(t *testing.T) {
	ctx := context.Background()
	c, _, _ := serve(t)
	s, err := c.Request(ctx, api.RequestBody{Address: "sandbox.agent", Key: "rag-1", Profile: "rag", Prefix: "ROBOCO_TEST_"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Features["redis"], []string{"search"}) || !slices.Equal(s.Features["postgres"], []string{"vector"}) {
		t.Errorf("features %v, want the rag profile's", s.Features)
	}
	if s.Env["ROBOCO_TEST_POSTGRES_URL"] == "" || s.URL("postgres") != s.Env["ROBOCO_TEST_POSTGRES_URL"] {
		t.Errorf("env names %v, want ROBOCO_TEST_… read by the accessors", keys(s.Env))
	}
	if _, err := c.Request(ctx, api.RequestBody{Address: "sandbox.agent", Key: "rag-2", Profile: "nope"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("unknown profile = %v, want ErrNotFound", err)
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The client's errors match the same sentinels as the library's.
func TestTypedErrorsOverHTTP(t *testing.T) {
	ctx := context.Background()
	c, sb, url := serve(t)
	unlock, err := state.Open(sb.StatePath()).LockInstance(ctx, `sandbox.agent["held"]`, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	wrongToken, err := apiclient.New(url, "not-the-token")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		call   func() error
		want   error
		status int
	}{
		{"unknown block", func() error {
			_, err := c.Request(ctx, api.RequestBody{Address: "sandbox.nope", Key: "k"})
			return err
		}, api.ErrNotFound, 404},
		{"feature off the allowlist", func() error {
			_, err := c.Request(ctx, api.RequestBody{Address: "sandbox.agent", Key: "k", Extensions: map[string][]string{"postgres": {"plpython3u"}}})
			return err
		}, sandboxer.ErrNotAllowed, 422},
		{"bad ttl", func() error {
			_, err := c.Request(ctx, api.RequestBody{Address: "sandbox.agent", Key: "k", TTL: "forever"})
			return err
		}, api.ErrInvalid, 400},
		{"instance busy", func() error {
			_, err := c.Request(ctx, api.RequestBody{Address: "sandbox.agent", Key: "held"})
			return err
		}, sandboxer.ErrBusy, 409},
		{"wrong token", func() error {
			_, err := wrongToken.List(ctx)
			return err
		}, api.ErrUnauthorized, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want errors.Is %v", err, tc.want)
			}
			var e *api.Error
			if !errors.As(err, &e) || e.Status != tc.status {
				t.Errorf("status of %v: want %d", err, tc.status)
			}
			if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "not-the-token") {
				t.Errorf("error shows the token: %v", err)
			}
		})
	}
	_, err = c.Request(ctx, api.RequestBody{Address: "sandbox.agent", Key: "k", Extensions: map[string][]string{"postgres": {"plpython3u"}}})
	var e *api.Error
	if !errors.As(err, &e) || !slices.Contains(e.Allowed, "vector") {
		t.Errorf("not-allowed error carries allowed = %v, want the postgres allowlist", e)
	}
}

// Every answer decodes strictly into the shared types: no field the api
// package does not declare, so server and client cannot drift apart.
func TestAnswersAreExactlyTheSharedShapes(t *testing.T) {
	_, _, url := serve(t)
	call := func(method, path string, body any, into any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, url+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			t.Errorf("%s %s (HTTP %d): %v", method, path, resp.StatusCode, err)
		}
	}
	call("POST", api.PathRequest, api.RequestBody{Address: "sandbox.agent", Key: "a"}, &api.Sandbox{})
	call("POST", api.PathExtend, api.ExtendBody{Address: "sandbox.agent", Key: "a", TTL: "1h"}, &api.Instance{})
	call("GET", api.PathSandboxes, nil, &api.SandboxList{})
	call("POST", api.PathRelease, api.ReleaseBody{Address: "sandbox.agent", Key: "a"}, &api.ReleaseResult{})
	call("GET", api.PathHealth, nil, &api.Health{})
	var eb api.ErrorBody
	call("POST", api.PathRequest, api.RequestBody{Address: "sandbox.nope", Key: "a"}, &eb)
	if eb.Code != api.CodeNotFound {
		t.Errorf("error body code = %q, want not_found", eb.Code)
	}
}

func TestNewRejectsBadSettings(t *testing.T) {
	if _, err := apiclient.New("127.0.0.1:8080", token); err == nil {
		t.Error("accepted a URL without a scheme")
	}
	if _, err := apiclient.New("http://127.0.0.1:8080", " "); err == nil {
		t.Error("accepted an empty token")
	}
}

func TestServerGoneIsAnError(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	c, err := apiclient.New(url, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(context.Background()); err == nil {
		t.Error("Health of a closed server succeeded")
	}
}
