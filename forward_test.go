package sandboxer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/providers/fake"
	"github.com/sandboxer/sandboxer/state"
)

// forwardingProvider is the fake runtime with a forwarder that hands out
// 127.0.0.1 and a port per service (postgres 15432, redis 16379), as the
// Kubernetes runtime does where pod IPs do not route.
type forwardingProvider struct {
	*fake.Provider
	asked int
}

func (p *forwardingProvider) Forward(_ context.Context, rec *state.Record) (map[string]apply.Endpoint, error) {
	p.asked++
	out := map[string]apply.Endpoint{}
	for svc := range rec.Credentials {
		port := 15432
		if svc == "redis" {
			port = 16379
		}
		out[svc] = apply.Endpoint{Host: "127.0.0.1", Port: port}
	}
	return out, nil
}

func openForwarding(t *testing.T, forward bool) (*sandboxer.Sandboxer, *forwardingProvider) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &forwardingProvider{Provider: fake.New(nil)}
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{Provider: p, Environ: []string{},
		LockTimeout: 200 * time.Millisecond, Forward: forward})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, p
}

// A process that hands out URLs while it runs (Options.Forward: serve,
// mcp) answers a request with the forwarded endpoints and marks them; a
// one-shot command answers with the recorded ones.
func TestRequestHandsOutForwardedEndpoints(t *testing.T) {
	ctx := context.Background()
	sb, p := openForwarding(t, true)
	s, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"SANDBOXER_POSTGRES_HOST": "127.0.0.1", "SANDBOXER_POSTGRES_PORT": "15432",
		"SANDBOXER_REDIS_PORT": "16379", "SANDBOXER_POSTGRES_FORWARDED": "1", "SANDBOXER_REDIS_FORWARDED": "1",
	} {
		if got := s.Env[name]; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if u := s.Env["SANDBOXER_POSTGRES_URL"]; !strings.Contains(u, "@127.0.0.1:15432/") {
		t.Errorf("SANDBOXER_POSTGRES_URL does not name the forwarded port")
	}
	if p.asked != 1 {
		t.Errorf("the forwarder was asked %d times, want 1", p.asked)
	}

	one, p1 := openForwarding(t, false)
	s1, err := one.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s1.Env["SANDBOXER_POSTGRES_FORWARDED"]; ok || s1.Env["SANDBOXER_POSTGRES_PORT"] == "15432" || p1.asked != 0 {
		t.Errorf("a one-shot request forwarded: port %s, asked %d", s1.Env["SANDBOXER_POSTGRES_PORT"], p1.asked)
	}
}

// Forward (sandboxer connect) hands out a sandbox in state with its
// forwarded endpoints; one not in state is ErrNotFound.
func TestForwardSandboxInState(t *testing.T) {
	ctx := context.Background()
	sb, _ := openForwarding(t, false)
	if _, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	fw, err := sb.Forward(ctx, `sandbox.agent["k"]`, "APP_")
	if err != nil {
		t.Fatal(err)
	}
	if len(fw.Forwarded) != 2 || fw.Env["APP_REDIS_PORT"] != strconv.Itoa(16379) || fw.Env["APP_REDIS_FORWARDED"] != "1" {
		t.Errorf("Forward: %v, redis port %q", fw.Forwarded, fw.Env["APP_REDIS_PORT"])
	}
	if _, err := sb.Forward(ctx, `sandbox.agent["gone"]`, ""); !errors.Is(err, sandboxer.ErrNotFound) {
		t.Errorf("Forward of an instance not in state: %v, want ErrNotFound", err)
	}
}
