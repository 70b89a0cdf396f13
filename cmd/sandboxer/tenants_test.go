package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/tenants"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
)

const tenantsConfig = `
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
}

project "agents" {
  services = ["postgres"]
}

sandbox "agent" {
  project   = project.agents
  on_demand = true
  ttl       = "10m"
}
`

// The tokens of the test's tenants (random per run, so no log can hold
// them by chance).
type tenantTokens struct{ admin, acme, beta, gamma string }

func tenantsFile(tok tenantTokens, withBeta bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tenant \"acme\" {\n  tokens = [%q]\n  quota {\n    databases = 2\n    snapshots = 1\n  }\n}\n", tenants.Hash(tok.acme))
	if withBeta {
		fmt.Fprintf(&b, "tenant \"beta\" {\n  tokens = [%q]\n  blocks = [\"agent\"]\n}\n", tenants.Hash(tok.beta))
	}
	fmt.Fprintf(&b, "tenant \"gamma\" {\n  tokens = [%q]\n  quota {\n    instances = 5\n    max_ttl = \"1h\"\n  }\n}\n", tenants.Hash(tok.gamma))
	return b.String()
}

// Three serve replicas on one PostgreSQL state, with a tenants file:
// two tenants × one key are two instances, each 404 on the other's; a
// quota of 5 under 20 concurrent requests spread over the replicas makes
// exactly 5; an MCP session runs through a proxy that sends each call to
// the next replica; a token removed from the file is refused after the
// reload; no log line holds a token, a hash or a password.
func TestServeTenantsAcrossReplicas(t *testing.T) {
	testenv.RequireDocker(t)
	pgRequired(t)
	base := os.Getenv(testenv.PostgresURLEnv)
	if base == "" {
		t.Skipf("%s is not set", testenv.PostgresURLEnv)
	}
	start := time.Now()
	ctx := context.Background()
	schema := "sbxtenants_" + strings.ToLower(strings.ReplaceAll(state.NewLineage(), "-", ""))[:16]
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	backend := pgstate.OpenURL(u.String(), nil)
	records := func() map[string]*state.Record {
		snap, err := backend.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return snap.Records
	}
	t.Cleanup(func() {
		if snap, err := backend.Snapshot(context.Background()); err == nil && snap.Lineage != "" {
			removeLabelled(snap.Lineage)
		}
		backend.Close()
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})

	dir := t.TempDir()
	writeConfig(t, dir, tenantsConfig)
	tok := tenantTokens{admin: "adm-" + state.NewLineage(), acme: "acme-" + state.NewLineage(),
		beta: "beta-" + state.NewLineage(), gamma: "gamma-" + state.NewLineage()}
	tfile := filepath.Join(dir, "tenants.hcl")
	if err := os.WriteFile(tfile, []byte(tenantsFile(tok, true)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token.txt"), []byte(tok.admin), 0o600); err != nil {
		t.Fatal(err)
	}

	// A bad tenants file: serve refuses to start, with file:line:col.
	bad := sandboxerCmd(t, dir, "serve", "--listen", "127.0.0.1:0", "--token-file", "token.txt", "--tenants", "bad.hcl")
	bad.Env = append(bad.Env, "SANDBOXER_BACKEND_URL="+u.String())
	if err := os.WriteFile(filepath.Join(dir, "bad.hcl"), []byte("tenant \"x\" {\n  tokens = [\""+tok.acme+"\"]\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bad.hcl:2:13: Not a token hash") || strings.Contains(string(out), tok.acme) {
		t.Fatalf("serve with a plain-text token in the tenants file: %v\n%s", err, out)
	}

	type replica struct {
		url  string
		logs *syncBuffer
	}
	var reps []replica
	for i := range 3 {
		addrFile := filepath.Join(dir, fmt.Sprintf("addr%d.txt", i))
		srv := sandboxerCmd(t, dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--reap-interval", "0",
			"--token-file", "token.txt", "--tenants", "tenants.hcl", "--replica", fmt.Sprintf("r%d", i))
		srv.Env = append(srv.Env, "SANDBOXER_BACKEND_URL="+u.String())
		logs := &syncBuffer{}
		srv.Stdout, srv.Stderr = logs, logs
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = srv.Process.Signal(os.Interrupt)
			_ = srv.Wait()
		})
		reps = append(reps, replica{url: "http://" + waitAddrFile(t, addrFile), logs: logs})
	}
	call := func(rep int, token, method, path string, body any) (int, http.Header, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, reps[rep%3].url+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, data
	}
	requestAs := func(rep int, token, key string) (int, api.Sandbox, api.ErrorBody) {
		t.Helper()
		status, _, data := call(rep, token, "POST", api.PathRequest, api.RequestBody{Address: "sandbox.agent", Key: key})
		var sbx api.Sandbox
		var eb api.ErrorBody
		if status == 200 {
			_ = json.Unmarshal(data, &sbx)
		} else {
			_ = json.Unmarshal(data, &eb)
		}
		return status, sbx, eb
	}

	// Two tenants, one key, through two replicas.
	sa, a, eb := requestAs(0, tok.acme, "dev-7")
	if sa != 200 {
		t.Fatalf("acme's request: %d %+v", sa, eb)
	}
	sb, b, eb := requestAs(1, tok.beta, "dev-7")
	if sb != 200 {
		t.Fatalf("beta's request: %d %+v", sb, eb)
	}
	pa, pb := a.Env["SANDBOXER_POSTGRES_PASSWORD"], b.Env["SANDBOXER_POSTGRES_PASSWORD"]
	if a.Address == b.Address || pa == pb || a.Reused || b.Reused {
		t.Fatalf("acme %s and beta %s asking for dev-7: want two new instances with their own credentials", a.Address, b.Address)
	}
	if got := psql(t, a.Env["SANDBOXER_POSTGRES_URL"], "SELECT 1"); got != "1" {
		t.Errorf("acme's instance: %q", got)
	}
	// beta on acme's: 404 not_found for extend, nothing released, not listed.
	status, _, data := call(2, tok.beta, "POST", api.PathExtend, api.ExtendBody{Address: a.Address, TTL: "5m"})
	if status != 404 || !strings.Contains(string(data), `"not_found"`) || strings.Contains(string(data), pa) {
		t.Errorf("beta extending acme's instance: %d %s, want 404 not_found", status, data)
	}
	status, _, data = call(0, tok.beta, "POST", api.PathRelease, api.ReleaseBody{Address: a.Address})
	if status != 200 || !strings.Contains(string(data), `"released": false`) {
		t.Errorf("beta releasing acme's instance: %d %s, want nothing released", status, data)
	}
	listOf := func(token string) []string {
		t.Helper()
		status, _, data := call(1, token, "GET", api.PathSandboxes, nil)
		var l api.SandboxList
		if err := json.Unmarshal(data, &l); status != 200 || err != nil {
			t.Fatalf("list: %d %s", status, data)
		}
		var out []string
		for _, in := range l.Sandboxes {
			out = append(out, in.Address+" "+in.Owner)
		}
		slices.Sort(out)
		return out
	}
	if got, want := listOf(tok.beta), []string{b.Address + " beta"}; !slices.Equal(got, want) {
		t.Errorf("beta's list: %v, want %v", got, want)
	}
	if got, want := listOf(tok.admin), []string{a.Address + " acme", b.Address + " beta"}; !slices.Equal(got, want) {
		t.Errorf("the operator's list: %v, want %v", got, want)
	}
	recs := records()
	if recs[a.Address] == nil || recs[a.Address].Owner != "acme" || recs[b.Address] == nil || recs[b.Address].Owner != "beta" {
		t.Errorf("owners in the state: %v", slices.Sorted(maps.Keys(recs)))
	}
	if got := psql(t, a.Env["SANDBOXER_POSTGRES_URL"], "SELECT 1"); got != "1" {
		t.Errorf("acme's instance after beta's tries: %q", got)
	}
	t.Logf("two tenants: %s", time.Since(start).Round(time.Second))

	// gamma's quota of 5 under 20 concurrent requests over 3 replicas.
	qstart := time.Now()
	var made, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, eb := requestAs(i, tok.gamma, fmt.Sprintf("q%d", i))
			switch {
			case status == 200:
				made.Add(1)
			case eb.Code == api.CodeQuotaExceeded && strings.Contains(eb.Error, "quota instances is 5; 5 live"):
				refused.Add(1)
			default:
				t.Errorf("gamma's request %d: %d %+v", i, status, eb)
			}
		}()
	}
	wg.Wait()
	owned := 0
	for _, r := range records() {
		if r.Owner == "gamma" {
			owned++
		}
	}
	if made.Load() != 5 || refused.Load() != 15 || owned != 5 {
		t.Fatalf("quota 5, 20 requests: %d made, %d refused, %d in state; want 5, 15, 5", made.Load(), refused.Load(), owned)
	}
	t.Logf("quota: %s", time.Since(qstart).Round(time.Second))

	// An MCP session, each call to the next replica.
	var next atomic.Int32
	targets := make([]*url.URL, 3)
	for i, r := range reps {
		targets[i], _ = url.Parse(r.url)
	}
	seen := make([]atomic.Int32, 3)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		i := int(next.Add(1)) % 3
		seen[i].Add(1)
		pr.SetURL(targets[i])
	}})
	defer proxy.Close()
	mstart := time.Now()
	cs, err := mcpClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: proxy.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{tok.acme, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("MCP through the round-robin proxy: %v", err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.OutputSchema == nil {
			t.Errorf("tool %s has no output schema", tl.Name)
		}
	}
	var m api.Sandbox
	if msg := callTool(t, cs, "request_sandbox", map[string]any{"address": "sandbox.agent", "key": "mcp-1"}, &m); msg != "" {
		t.Fatal(msg)
	}
	if msg := callTool(t, cs, "request_sandbox", map[string]any{"address": "sandbox.agent"}, nil); !strings.HasPrefix(msg, "invalid: give a key") {
		t.Errorf("request without a key over stateless HTTP: %q", msg)
	}
	var ext api.Instance
	if msg := callTool(t, cs, "extend_sandbox", map[string]any{"address": m.Address, "ttl": "20m"}, &ext); msg != "" || ext.Owner != "acme" {
		t.Errorf("extend over MCP: %q, owner %q", msg, ext.Owner)
	}
	var list api.SandboxList
	if msg := callTool(t, cs, "list_sandboxes", nil, &list); msg != "" || len(list.Sandboxes) != 2 {
		t.Errorf("acme's list over MCP: %q, %d instances, want its 2", msg, len(list.Sandboxes))
	}
	var rel struct{ Released bool }
	if msg := callTool(t, cs, "release_sandbox", map[string]any{"address": m.Address}, &rel); msg != "" || !rel.Released {
		t.Errorf("release over MCP: %q, %v", msg, rel.Released)
	}
	_ = cs.Close()
	for i := range seen {
		if seen[i].Load() == 0 {
			t.Errorf("replica %d answered no MCP call", i)
		}
	}
	t.Logf("MCP session over 3 replicas: %s", time.Since(mstart).Round(time.Millisecond))

	// Databases per test, per tenant: acme's quota of 2 holds, also under
	// concurrent calls over the replicas; beta's come from a host of its
	// own, and its drop of acme's database by name reaches nothing.
	dstart := time.Now()
	dbAs := func(rep int, token string) (int, api.Sandbox, api.ErrorBody) {
		t.Helper()
		status, _, data := call(rep, token, "POST", api.PathDatabases, api.DatabaseBody{Address: "sandbox.agent"})
		var sbx api.Sandbox
		var eb api.ErrorBody
		if status == 200 {
			_ = json.Unmarshal(data, &sbx)
		} else {
			_ = json.Unmarshal(data, &eb)
		}
		return status, sbx, eb
	}
	dropAs := func(rep int, token, name string) {
		t.Helper()
		if s, _, d := call(rep, token, "POST", api.PathDropDatabase, api.DropDatabaseBody{Address: "sandbox.agent", Name: name}); s != 200 {
			t.Fatalf("drop %s: %d %s", name, s, d)
		}
	}
	var dbs []api.Sandbox
	for i := range 2 {
		s, d, eb := dbAs(i, tok.acme)
		if s != 200 {
			t.Fatalf("acme's database %d: %d %+v", i, s, eb)
		}
		dbs = append(dbs, d)
	}
	if s, _, eb := dbAs(2, tok.acme); s != 403 || eb.Code != api.CodeQuotaExceeded || !strings.Contains(eb.Error, "quota databases is 2; 2 live") {
		t.Errorf("acme's third database: %d %+v, want quota_exceeded", s, eb)
	}
	s, bdb, eb := dbAs(0, tok.beta)
	if s != 200 {
		t.Fatalf("beta's database: %d %+v", s, eb)
	}
	if want := `sandbox.agent["acme.sbx-databases"]`; dbs[0].Address != want || bdb.Address != `sandbox.agent["beta.sbx-databases"]` {
		t.Errorf("hosts: acme's %s, beta's %s; want one each", dbs[0].Address, bdb.Address)
	}
	dropAs(1, tok.beta, dbs[0].Env["SANDBOXER_POSTGRES_DB"])
	if got := psql(t, dbs[0].Env["SANDBOXER_POSTGRES_URL"], "SELECT 1"); got != "1" {
		t.Errorf("acme's database after beta dropped its name: %q", got)
	}
	dropAs(2, tok.acme, dbs[0].Env["SANDBOXER_POSTGRES_DB"])
	dropAs(0, tok.acme, dbs[1].Env["SANDBOXER_POSTGRES_DB"])
	made.Store(0)
	refused.Store(0)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch s, _, eb := dbAs(i, tok.acme); {
			case s == 200:
				made.Add(1)
			case eb.Code == api.CodeQuotaExceeded:
				refused.Add(1)
			default:
				t.Errorf("acme's concurrent database %d: %d %+v", i, s, eb)
			}
		}()
	}
	wg.Wait()
	if made.Load() != 2 || refused.Load() != 4 {
		t.Errorf("quota 2, 6 concurrent databases: %d made, %d refused; want 2, 4", made.Load(), refused.Load())
	}
	t.Logf("databases per tenant: %s", time.Since(dstart).Round(time.Second))

	// Snapshot names per tenant: acme's "base" is acme.base; its quota of
	// 1 holds; beta finds neither "base" nor "acme.base".
	status, _, data = call(0, tok.acme, "POST", api.PathSnapshot, api.DataBody{Address: a.Address, Snapshot: "base"})
	var dr api.DataResult
	if _ = json.Unmarshal(data, &dr); status != 200 || dr.Snapshot != "acme.base" {
		t.Errorf("acme's snapshot: %d %s, want acme.base", status, data)
	}
	status, _, data = call(1, tok.acme, "POST", api.PathSnapshot, api.DataBody{Address: a.Address, Snapshot: "second"})
	if status != 403 || !strings.Contains(string(data), "quota snapshots is 1; 1 held") {
		t.Errorf("acme's second snapshot: %d %s, want quota_exceeded", status, data)
	}
	for _, name := range []string{"base", "acme.base"} {
		status, _, data = call(2, tok.beta, "POST", api.PathRestore, api.DataBody{Address: b.Address, Snapshot: name})
		if status != 404 || !strings.Contains(string(data), `"not_found"`) {
			t.Errorf("beta restoring %q: %d %s, want 404 not_found", name, status, data)
		}
	}
	if status, _, data = call(0, tok.acme, "POST", api.PathRestore, api.DataBody{Address: a.Address, Snapshot: "base"}); status != 200 {
		t.Errorf("acme restoring its base: %d %s", status, data)
	}

	// beta's token leaves the file: refused by every replica after the
	// reload; the others still pass.
	if err := os.WriteFile(tfile, []byte(tenantsFile(tok, false)), 0o600); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool {
		for i := range 3 {
			if s, _, _ := call(i, tok.beta, "GET", api.PathSandboxes, nil); s != 401 {
				return false
			}
		}
		return true
	})
	if s, _, _ := call(0, tok.acme, "GET", api.PathSandboxes, nil); s != 200 {
		t.Errorf("acme after the reload: %d", s)
	}
	// A bad file on reload: logged, the previous one stays.
	if err := os.WriteFile(tfile, []byte("tenant \"acme\" {\n  colour = 1\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool { return strings.Contains(reps[0].logs.String(), "keeping the previous one") })
	if s, _, _ := call(0, tok.acme, "GET", api.PathSandboxes, nil); s != 200 {
		t.Errorf("acme after a bad reload: %d, want the previous file in force", s)
	}

	// The operator cleans up everything.
	for addr := range records() {
		if s, _, d := call(0, tok.admin, "POST", api.PathRelease, api.ReleaseBody{Address: addr}); s != 200 {
			t.Errorf("release %s: %d %s", addr, s, d)
		}
	}
	all := ""
	for _, r := range reps {
		all += r.logs.String()
	}
	secrets := []string{tok.admin, tok.acme, tok.beta, tok.gamma, pa, pb, m.Env["SANDBOXER_POSTGRES_PASSWORD"]}
	for _, tk := range []string{tok.admin, tok.acme, tok.beta, tok.gamma} {
		secrets = append(secrets, strings.TrimPrefix(tenants.Hash(tk), "sha256:"))
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(all, s) {
			t.Errorf("a log line holds a token, a hash or a password")
		}
	}
	if t.Failed() {
		t.Logf("logs:\n%s", all)
	}
	t.Logf("total %s", time.Since(start).Round(time.Second))
}

// syncBuffer is a bytes.Buffer safe for a process's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
