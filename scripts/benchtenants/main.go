// Command benchtenants measures what tenancy costs a cache-hit request,
// side by side in one run, calls interleaved so load falls on both alike:
//
//   - the HTTP API: POST /v1/request with the operator's single token on a
//     serve without a tenants file (today's server), against a tenant's
//     token on a serve whose tenants file holds 100 tenants;
//   - MCP over HTTP (stateless): request_sandbox straight to one replica,
//     against the same call through a round-robin proxy over 3 replicas
//     with no affinity (each call to the next replica).
//
// Every replica shares one state (the local state file); every measured
// call is a cache hit (probe included), checked in its answer.
//
// Usage: go run ./scripts/benchtenants [-bin bin/sandboxer] [-n 200] [-tenants 100]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// failure is a check that failed: main recovers it after every deferred
// cleanup ran (servers stopped, instances released).
type failure struct{ err error }

func main() {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				panic(r)
			}
			fmt.Fprintln(os.Stderr, "benchtenants:", f.err)
			os.Exit(1)
		}
	}()
	bin := flag.String("bin", "bin/sandboxer", "sandboxer binary")
	n := flag.Int("n", 200, "calls to measure for each side")
	ntenants := flag.Int("tenants", 100, "tenants in the file")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	check(err)
	dir, err := os.MkdirTemp("", "sbx-bench-tenants-")
	check(err)
	defer os.RemoveAll(dir)
	cfg := `provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
}
project "bench" {
  services = ["postgres"]
}
sandbox "agent" {
  project   = project.bench
  on_demand = true
  ttl       = "1h"
}
`
	check(os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(cfg), 0o600))
	admin := "bench-admin-" + random()
	check(os.WriteFile(filepath.Join(dir, "token.txt"), []byte(admin), 0o600))
	var tf strings.Builder
	var tenantTok string
	for i := range *ntenants {
		tok := fmt.Sprintf("bench-t%03d-%s", i, random())
		if i == *ntenants/2 {
			tenantTok = tok
		}
		sum := sha256.Sum256([]byte(tok))
		fmt.Fprintf(&tf, "tenant \"t%03d\" {\n  tokens = [\"sha256:%s\"]\n  quota {\n    instances = 5\n    max_ttl = \"2h\"\n  }\n}\n", i, hex.EncodeToString(sum[:]))
	}
	check(os.WriteFile(filepath.Join(dir, "tenants.hcl"), []byte(tf.String()), 0o600))

	var servers []*exec.Cmd
	defer func() {
		for _, s := range servers {
			_ = s.Process.Signal(syscall.SIGTERM)
			_ = s.Wait()
		}
	}()
	serve := func(name string, args ...string) string {
		addrFile := filepath.Join(dir, name+".addr")
		cmd := exec.Command(abs, append([]string{"--chdir", dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile,
			"--reap-interval", "0", "--token-file", "token.txt", "--replica", name}, args...)...)
		check(cmd.Start())
		servers = append(servers, cmd)
		return "http://" + waitAddr(addrFile)
	}
	single := serve("single")
	var reps []string
	for i := range 3 {
		reps = append(reps, serve(fmt.Sprintf("r%d", i), "--tenants", "tenants.hcl"))
	}

	client := &http.Client{Timeout: time.Minute}
	body := []byte(`{"address":"sandbox.agent","key":"bench","ttl":"1h"}`)
	call := func(base, token string) []byte {
		r, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/v1/request", bytes.NewReader(body))
		check(err)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(r)
		check(err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		check(err)
		if resp.StatusCode != http.StatusOK {
			check(fmt.Errorf("API answered %s: %s", resp.Status, b))
		}
		return b
	}
	start := time.Now()
	call(single, admin)
	call(reps[0], tenantTok)
	fmt.Printf("provisioned the operator's and a tenant's instance in %s\n", time.Since(start).Round(time.Millisecond))
	defer func() {
		for _, addr := range []string{`sandbox.agent["bench"]`, `sandbox.agent["t` + fmt.Sprintf("%03d", *ntenants/2) + `.bench"]`} {
			b, _ := json.Marshal(map[string]string{"address": addr})
			r, _ := http.NewRequest(http.MethodPost, single+"/v1/release", bytes.NewReader(b))
			r.Header.Set("Authorization", "Bearer "+admin)
			if resp, err := client.Do(r); err == nil {
				resp.Body.Close()
			}
		}
	}()
	for range 5 {
		call(single, admin)
		call(reps[0], tenantTok)
	}
	var one, many []time.Duration
	for range *n {
		t := time.Now()
		mustReuse(call(single, admin))
		one = append(one, time.Since(t))
		t = time.Now()
		mustReuse(call(reps[0], tenantTok))
		many = append(many, time.Since(t))
	}
	p99one, p99many := report("API cache hit, single token (no tenants file)", one), report(fmt.Sprintf("API cache hit, a tenant of %d", *ntenants), many)
	fmt.Printf("%-50s %+.2f ms (goal: within 1 ms)\n", "API p99 difference", ms(p99many-p99one))

	// MCP: straight to one replica, and round-robin over three.
	targets := make([]*url.URL, len(reps))
	for i, r := range reps {
		targets[i], _ = url.Parse(r)
	}
	var next atomic.Int32
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(targets[int(next.Add(1))%len(targets)])
	}})
	defer proxy.Close()
	ctx := context.Background()
	connect := func(endpoint string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "benchtenants", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{tenantTok, http.DefaultTransport}}}, nil)
		check(err)
		return cs
	}
	direct, rr := connect(reps[0]+"/mcp"), connect(proxy.URL+"/mcp")
	defer direct.Close()
	defer rr.Close()
	tool := func(cs *mcp.ClientSession) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_sandbox",
			Arguments: map[string]any{"address": "sandbox.agent", "key": "bench", "ttl": "1h"}})
		check(err)
		if res.IsError {
			check(fmt.Errorf("request_sandbox: %v", res.Content))
		}
		b, err := json.Marshal(res.StructuredContent)
		check(err)
		mustReuse(b)
	}
	for range 5 {
		tool(direct)
		tool(rr)
	}
	var d1, d3 []time.Duration
	for range *n {
		t := time.Now()
		tool(direct)
		d1 = append(d1, time.Since(t))
		t = time.Now()
		tool(rr)
		d3 = append(d3, time.Since(t))
	}
	report("MCP request_sandbox, one replica", d1)
	report("MCP request_sandbox, round-robin over 3 replicas", d3)
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func random() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mustReuse(out []byte) {
	var r struct {
		Reused bool `json:"reused"`
	}
	check(json.Unmarshal(out, &r))
	if !r.Reused {
		check(fmt.Errorf("a measured call was not a cache hit"))
	}
}

func waitAddr(path string) string {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b))
		}
		time.Sleep(20 * time.Millisecond)
	}
	check(fmt.Errorf("serve did not write %s", path))
	return ""
}

// report prints p50/p99/max and returns the p99.
func report(what string, d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.5) - 1
		return d[min(max(i, 0), len(d)-1)]
	}
	fmt.Printf("%-50s n=%d  p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms\n", what, len(d),
		ms(pct(0.50)), ms(pct(0.99)), ms(d[len(d)-1]))
	return pct(0.99)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func check(err error) {
	if err != nil {
		panic(failure{err})
	}
}
