package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// The MCP server through the SDK's own client, against this binary on
// the real engine: over stdio (`sandboxer mcp`) and over streamable HTTP
// (`sandboxer serve` at /mcp).

const mcpConfig = `
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
}

project "agents" {
  services   = ["postgres"]
  extensions = { postgres = ["pg_trgm"] }
}

sandbox "agent" {
  project   = project.agents
  on_demand = true
  ttl       = "10m"
}
`

func mcpClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "sandboxer-test", Version: "1"}, nil)
}

// callTool calls a tool and decodes its structured result into out; it
// returns the tool error's text, "" for success.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured result: %v: %s", name, err, b)
		}
	}
	return ""
}

func psql(t *testing.T, url, sql string) string {
	t.Helper()
	out, err := exec.Command("psql", url, "-tAc", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestMCPStdio(t *testing.T) {
	testenv.RequireDocker(t)
	dir := t.TempDir()
	writeConfig(t, dir, mcpConfig)
	cleanupLineage(t, dir)
	ctx := context.Background()
	cmd := sandboxerCmd(t, dir, "mcp", "--release-on-disconnect")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcp log:\n%s", stderr.String())
		}
	})
	// A loaded machine can take longer than the SDK's default 5 s to
	// remove a PostgreSQL container at disconnect.
	cs, err := mcpClient().Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Minute}, nil)
	if err != nil {
		t.Fatalf("connect over stdio: %v", err)
	}

	var tools []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool.Name)
	}
	for _, want := range []string{"request_sandbox", "release_sandbox", "extend_sandbox", "list_sandboxes", "snapshot_sandbox", "reset_sandbox", "list_features"} {
		if !strings.Contains(strings.Join(tools, " "), want) {
			t.Errorf("no tool %s in %v", want, tools)
		}
	}

	var feats api.FeatureList
	if msg := callTool(t, cs, "list_features", map[string]any{}, &feats); msg != "" {
		t.Fatalf("list_features: %s", msg)
	}
	if len(feats.Services) != 1 || feats.Services[0].Service != "postgres" || feats.Services[0].Provided["pg_trgm"] == "" {
		t.Errorf("list_features = %+v, want postgres providing pg_trgm with its version", feats)
	}

	// Request with the session's own key; psql with the handed-out URL.
	var s1 api.Sandbox
	if msg := callTool(t, cs, "request_sandbox", map[string]any{"address": "sandbox.agent", "extensions": map[string]any{"postgres": []string{"pg_trgm"}}}, &s1); msg != "" {
		t.Fatalf("request_sandbox: %s", msg)
	}
	if !strings.HasPrefix(s1.Address, `sandbox.agent["mcp-`) || s1.Reused {
		t.Errorf("first request: %s reused=%v, want a fresh instance under the session's key", s1.Address, s1.Reused)
	}
	url1 := s1.Env["SANDBOXER_POSTGRES_URL"]
	if got := psql(t, url1, "SELECT similarity('sandbox', 'sandboxer') > 0"); got != "t" {
		t.Errorf("pg_trgm through psql: %q", got)
	}
	// A feature superset: replaced, credentials rotated, the old ones dead.
	var s2 api.Sandbox
	if msg := callTool(t, cs, "request_sandbox", map[string]any{"address": "sandbox.agent", "extensions": map[string]any{"postgres": []string{"pg_trgm", "citext"}}}, &s2); msg != "" {
		t.Fatalf("superset request: %s", msg)
	}
	if s2.Address != s1.Address || s2.Generation != s1.Generation+1 || s2.Env["SANDBOXER_POSTGRES_PASSWORD"] == s1.Env["SANDBOXER_POSTGRES_PASSWORD"] {
		t.Errorf("superset: %s#%d -> %s#%d, rotated=%v", s1.Address, s1.Generation, s2.Address, s2.Generation,
			s2.Env["SANDBOXER_POSTGRES_PASSWORD"] != s1.Env["SANDBOXER_POSTGRES_PASSWORD"])
	}
	if got := psql(t, s2.Env["SANDBOXER_POSTGRES_URL"], "SELECT 'A'::citext = 'a'"); got != "t" {
		t.Errorf("citext through psql: %q", got)
	}
	if out, err := exec.Command("psql", url1, "-tAc", "SELECT 1").CombinedOutput(); err == nil {
		t.Errorf("the replaced instance's URL still works: %s", out)
	}

	// A feature off the allowlist: a tool error naming what is allowed.
	msg := callTool(t, cs, "request_sandbox", map[string]any{"address": "sandbox.agent", "key": "bad", "extensions": map[string]any{"postgres": []string{"plpython3u"}}}, nil)
	if !strings.Contains(msg, "not_allowed") || !strings.Contains(msg, "vector") {
		t.Errorf("refused feature: %q, want not_allowed with the allowlist", msg)
	}
	if msg := callTool(t, cs, "request_sandbox", map[string]any{"address": "sandbox.nope"}, nil); !strings.Contains(msg, "not_found") {
		t.Errorf("unknown block: %q", msg)
	}

	var list api.SandboxList
	if msg := callTool(t, cs, "list_sandboxes", map[string]any{}, &list); msg != "" || len(list.Sandboxes) != 1 {
		t.Errorf("list_sandboxes = %+v (%s), want the one instance", list, msg)
	}
	b, _ := json.Marshal(list)
	if strings.Contains(string(b), s2.Env["SANDBOXER_POSTGRES_PASSWORD"]) {
		t.Error("list_sandboxes shows a password")
	}

	// Disconnect: the session's instance is released.
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	waitUntil(t, 2*time.Minute, func() bool {
		_, addrs := stateOf(t, dir)
		return len(addrs) == 0
	})
	lineage, _ := stateOf(t, dir)
	waitUntil(t, time.Minute, func() bool { return labelled(t, lineage) == 0 })
	for _, secret := range []string{s1.Env["SANDBOXER_POSTGRES_PASSWORD"], s2.Env["SANDBOXER_POSTGRES_PASSWORD"]} {
		if strings.Contains(stderr.String(), secret) {
			t.Errorf("the server's log holds a password:\n%s", stderr.String())
		}
	}
}

// bearer adds the API token to every request of the MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func TestMCPOverServe(t *testing.T) {
	testenv.RequireDocker(t)
	dir := t.TempDir()
	writeConfig(t, dir, mcpConfig)
	cleanupLineage(t, dir)
	const token = "mcp-test-token-9a2f"
	addrFile := filepath.Join(dir, "addr.txt")
	srv := sandboxerCmd(t, dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--reap-interval", "0", "--mcp-release-on-disconnect")
	srv.Env = append(srv.Env, "SANDBOXER_API_TOKEN="+token)
	var logs bytes.Buffer
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	})
	endpoint := "http://" + waitAddrFile(t, addrFile) + "/mcp"
	ctx := context.Background()

	// Without the token: refused.
	if _, err := mcpClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil); err == nil {
		t.Error("an MCP session without the API token was accepted")
	}
	connect := func() *mcp.ClientSession {
		cs, err := mcpClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatalf("connect over HTTP: %v", err)
		}
		return cs
	}
	a, b := connect(), connect()

	// Two sessions ask for one key at once: one provision, one reuse, the
	// same credentials.
	results := make([]api.Sandbox, 2)
	var wg sync.WaitGroup
	for i, cs := range []*mcp.ClientSession{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if msg := callTool(t, cs, "request_sandbox", map[string]any{"address": "sandbox.agent", "key": "shared"}, &results[i]); msg != "" {
				t.Errorf("session %d: %s", i, msg)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if results[0].Reused == results[1].Reused || results[0].Generation != 1 || results[1].Generation != 1 ||
		results[0].Env["SANDBOXER_POSTGRES_PASSWORD"] != results[1].Env["SANDBOXER_POSTGRES_PASSWORD"] {
		t.Errorf("two sessions, one key: reused %v/%v, generations %d/%d, want one provision then a reuse of it",
			results[0].Reused, results[1].Reused, results[0].Generation, results[1].Generation)
	}
	if got := psql(t, results[0].Env["SANDBOXER_POSTGRES_URL"], "SELECT 1"); got != "1" {
		t.Errorf("psql: %q", got)
	}
	// Session a asks for its own instance too; closing a releases that
	// one, not the shared one b still uses.
	var own api.Sandbox
	if msg := callTool(t, a, "request_sandbox", map[string]any{"address": "sandbox.agent"}, &own); msg != "" {
		t.Fatal(msg)
	}
	_, addrs := stateOf(t, dir)
	if len(addrs) != 2 {
		t.Fatalf("state holds %v, want the shared and a's own instance", addrs)
	}
	_ = a.Close()
	waitUntil(t, 2*time.Minute, func() bool { _, addrs := stateOf(t, dir); return len(addrs) == 1 })
	if _, addrs := stateOf(t, dir); addrs[0] != `sandbox.agent["shared"]` {
		t.Errorf("after a's disconnect the state holds %v, want the shared instance b uses", addrs)
	}
	var out struct{ Released bool }
	if msg := callTool(t, b, "release_sandbox", map[string]any{"address": "sandbox.agent", "key": "shared"}, &out); msg != "" || !out.Released {
		t.Errorf("b's release of the shared instance: %v (%s), want released", out.Released, msg)
	}
	_ = b.Close()
	lineage, _ := stateOf(t, dir)
	waitUntil(t, time.Minute, func() bool { return labelled(t, lineage) == 0 })
	for _, r := range results {
		if p := r.Env["SANDBOXER_POSTGRES_PASSWORD"]; p != "" && strings.Contains(logs.String(), p) {
			t.Errorf("serve's log holds a password")
		}
	}
	if t.Failed() {
		t.Logf("serve log:\n%s", logs.String())
	}
}

// `sandboxer database create|drop` as a CI step would run them.
func TestDatabaseCLI(t *testing.T) {
	testenv.RequireDocker(t)
	dir := t.TempDir()
	writeConfig(t, dir, mcpConfig)
	cleanupLineage(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "schema.sql"), []byte("CREATE TABLE t (id int); INSERT INTO t VALUES (7);"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := mustSandboxer(t, dir, "database", "create", "sandbox.agent", "--sql", "schema.sql", "--json")
	var db api.Sandbox
	if err := json.Unmarshal([]byte(out), &db); err != nil {
		t.Fatalf("database create --json: %v\n%s", err, out)
	}
	if got := psql(t, db.Env["SANDBOXER_POSTGRES_URL"], "SELECT id FROM t"); got != "7" {
		t.Errorf("migrated row: %q", got)
	}
	name := db.Env["SANDBOXER_POSTGRES_DB"]
	mustSandboxer(t, dir, "database", "drop", "sandbox.agent", name)
	if out, err := exec.Command("psql", db.Env["SANDBOXER_POSTGRES_URL"], "-tAc", "SELECT 1").CombinedOutput(); err == nil {
		t.Errorf("database %s answers after its drop: %s", name, out)
	}
	if code, _, stderr := runSandboxer(t, dir, "database", "create", "sandbox.agent", "--sql", "missing.sql"); code != 1 || !strings.Contains(stderr, "missing.sql") {
		t.Errorf("a missing --sql file: exit %d, %s", code, stderr)
	}
	mustSandboxer(t, dir, "release", "sandbox.agent", "--key", "sbx-databases")
}
