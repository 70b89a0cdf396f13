package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
)

const operationsConfig = `
provider "docker" {
  image "redis" { ref = "sandboxer.local/redis:7" }
}

project "ops" {
  services = ["redis"]
}

sandbox "agent" {
  project   = project.ops
  on_demand = true
  ttl       = "10m"
}
`

// serve on the real engine as a Deployment's replica runs it: /readyz is
// 200; a request moves /metrics (the provision's latency histogram, the
// route's counter, the live instances), which holds no key, password or
// token and answers only the operator's token; the janitor leads; on
// SIGTERM /readyz answers 503 through --shutdown-delay, then the listener
// closes, while a cold request in flight at the signal still succeeds;
// serve exits 0.
func TestServeMetricsReadyzShutdown(t *testing.T) {
	testenv.RequireDocker(t)
	start := time.Now()
	dir := t.TempDir()
	writeConfig(t, dir, operationsConfig)
	cleanupLineage(t, dir)
	token := "ops-" + state.NewLineage()
	if err := os.WriteFile(filepath.Join(dir, "token.txt"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "addr.txt")
	srv := startSandboxer(t, dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile,
		"--token-file", "token.txt", "--reap-interval", "200ms", "--shutdown-timeout", "2m", "--shutdown-delay", "3s")
	base := "http://" + waitAddrFile(t, addrFile)
	get := func(path, tok string) (int, string, error) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	request := func(key string) (*api.Sandbox, error) {
		req, _ := http.NewRequest("POST", base+api.PathRequest, strings.NewReader(`{"address":"sandbox.agent","key":"`+key+`"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var sbx api.Sandbox
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Errorf("request %s: %d %s", key, resp.StatusCode, b)
			return nil, nil
		}
		return &sbx, json.Unmarshal(b, &sbx)
	}

	if code, body, err := get(api.PathReady, ""); err != nil || code != 200 {
		t.Fatalf("readyz: %d %s %v", code, body, err)
	}
	const key = "metrics-key-7f3a"
	sbx, err := request(key)
	if err != nil || sbx == nil {
		t.Fatalf("request: %v", err)
	}
	password := sbx.Env["SANDBOXER_REDIS_PASSWORD"]
	if password == "" {
		t.Fatalf("no password in %v", sbx.Env)
	}
	if code, _, _ := get(api.PathMetrics, ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d, want 401", code)
	}
	var metrics string
	waitUntil(t, 30*time.Second, func() bool { // the janitor leads after its first tick
		_, metrics, _ = get(api.PathMetrics, token)
		return strings.Contains(metrics, "sandboxer_janitor_leader 1\n")
	})
	for _, want := range []string{
		`sandboxer_request_duration_seconds_count{block="sandbox.agent",event="provisioned"} 1`,
		`sandboxer_http_requests_total{code="",route="POST /v1/request",status="200"} 1`,
		`sandboxer_instances{block="sandbox.agent"} 1`,
		`sandboxer_state_up 1`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("no %s in the scrape:\n%s", want, metrics)
		}
	}
	for _, secret := range []string{key, password, token} {
		if strings.Contains(metrics, secret) {
			t.Errorf("the scrape holds a key, password or token:\n%s", metrics)
		}
	}

	// A cold request in flight when SIGTERM comes: it has taken its
	// instance lock (the file appears) and is provisioning.
	const slow = "inflight-key"
	sum := sha256.Sum256([]byte(`sandbox.agent["` + slow + `"]`))
	lockFile := filepath.Join(dir, ".sandboxer", "state.db.locks", hex.EncodeToString(sum[:])+".lock")
	type answer struct {
		sbx *api.Sandbox
		err error
	}
	done := make(chan answer, 1)
	go func() { s, err := request(slow); done <- answer{s, err} }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(lockFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second request took no instance lock within 30s")
		}
	}
	srv.signal(t, syscall.SIGTERM)
	select {
	case a := <-done:
		t.Fatalf("the request ended before the signal (%+v, %v): nothing was in flight", a.sbx, a.err)
	default:
	}
	srv.waitFor(t, "draining", 30*time.Second)
	// Within --shutdown-delay: still listening, not ready.
	if code, body, err := get(api.PathReady, ""); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, `"check": "shutdown"`) {
		t.Errorf("readyz after the signal: %d %s %v, want 503 naming shutdown", code, body, err)
	}
	srv.waitFor(t, "shutting down", 30*time.Second)
	a := <-done
	if a.err != nil || a.sbx == nil || a.sbx.Reused {
		t.Errorf("the request in flight at shutdown: %+v, %v; want a provision that succeeds", a.sbx, a.err)
	}
	if code := srv.wait(t, 2*time.Minute); code != 0 {
		t.Errorf("serve exited %d:\n%s", code, srv.stderrText())
	}
	logs := srv.stderrText()
	if !strings.Contains(logs, "janitor: this replica leads") {
		t.Errorf("the janitor did not lead:\n%s", logs)
	}
	if strings.Contains(logs, password) || strings.Contains(logs, token) {
		t.Errorf("serve's log holds a password or token")
	}
	t.Logf("took %s", time.Since(start).Round(time.Millisecond))
}
