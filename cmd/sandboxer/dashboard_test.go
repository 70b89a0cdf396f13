package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/tenants"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
)

// A block for tenants, and a pool of one whose claims the chart shows.
const dashboardConfig = `
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
}

project "agents" {
  services = ["postgres"]
}

project "cache" {
  services = ["redis"]
}

sandbox "agent" {
  project   = project.agents
  on_demand = true
  ttl       = "10m"
}

sandbox "pooled" {
  project   = project.cache
  on_demand = true
  ttl       = "10m"
  pool {
    size = 1
  }
}
`

// pageState is what the dashboard shows, read from the page's DOM.
type pageState struct {
	Viewer  string   `json:"viewer"`
	Pools   []string `json:"pools"`
	Latency string   `json:"latency"`
	Rows    []struct {
		Address string `json:"address"`
		Owner   string `json:"owner"`
		Runtime string `json:"runtime"`
		Age     string `json:"age"`
		TTL     string `json:"ttl"`
	} `json:"rows"`
	Events []struct {
		Event   string `json:"event"`
		Address string `json:"address"`
	} `json:"events"`
	HTML string `json:"html"`
	// Hidden: the page stops polling while its tab is hidden.
	Hidden bool `json:"hidden"`
}

const readPage = `(() => ({
  viewer: document.getElementById("viewer").textContent,
  pools: [...document.querySelectorAll("#pools tbody tr")].map((r) => r.textContent),
  latency: document.getElementById("latency-summary").textContent,
  rows: [...document.querySelectorAll("#instances tbody tr")].map((r) => ({
    address: r.dataset.address,
    owner: r.querySelector(".owner").textContent,
    runtime: r.querySelector(".runtime").textContent,
    age: r.querySelector(".age").textContent,
    ttl: r.querySelector(".ttl").textContent,
  })),
  events: [...document.querySelectorAll("#events li")].map((li) => ({ event: li.dataset.event, address: li.dataset.address })),
  html: document.documentElement.outerHTML,
  hidden: document.hidden,
}))()`

func (p pageState) row(address string) (int, bool) {
	for i, r := range p.Rows {
		if r.Address == address {
			return i, true
		}
	}
	return 0, false
}

func (p pageState) event(typ, address string) bool {
	for _, e := range p.Events {
		if e.Event == typ && e.Address == address {
			return true
		}
	}
	return false
}

// countdown is "9m 58s" in seconds.
var countdown = regexp.MustCompile(`^(\d+)m (\d{2})s$`)

func ttlSeconds(s string) (int, bool) {
	m := countdown.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	mins, _ := strconv.Atoi(m[1])
	sec, _ := strconv.Atoi(m[2])
	return mins*60 + sec, true
}

// The dashboard in a real headless Chromium against a real serve on the
// engine, with a tenants file: the operator's tab shows acme's and
// beta's instances (owner, runtime, a TTL counting down), the pool's
// level and acme's claim from it in the chart; acme's tab only acme's
// instances, no pool; releasing acme's instance through the API takes
// its row away and shows a released event; neither page nor feed ever
// holds a password, a token or a token's hash.
func TestDashboardInBrowser(t *testing.T) {
	testenv.RequireDocker(t)
	browser := testenv.Browser(t)
	start := time.Now()
	dir := t.TempDir()
	writeConfig(t, dir, dashboardConfig)
	cleanupLineage(t, dir)
	tok := tenantTokens{admin: "adm-" + state.NewLineage(), acme: "acme-" + state.NewLineage(),
		beta: "beta-" + state.NewLineage(), gamma: "gamma-" + state.NewLineage()}
	if err := os.WriteFile(filepath.Join(dir, "tenants.hcl"), []byte(tenantsFile(tok, true)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token.txt"), []byte(tok.admin), 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "addr.txt")
	srv := sandboxerCmd(t, dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--reap-interval", "0",
		"--token-file", "token.txt", "--tenants", "tenants.hcl")
	logs := &syncBuffer{}
	srv.Stdout, srv.Stderr = logs, logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
		if t.Failed() {
			t.Logf("serve log:\n%s", logs.String())
		}
	})
	base := "http://" + waitAddrFile(t, addrFile)

	call := func(token, method, path string, body any) (int, []byte, error) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp.StatusCode, data, err
	}
	request := func(token, address, key string) (api.Sandbox, error) {
		var sbx api.Sandbox
		status, data, err := call(token, "POST", api.PathRequest, api.RequestBody{Address: address, Key: key})
		if err == nil && status != 200 {
			err = fmt.Errorf("request %s: %d %s", key, status, data)
		}
		if err == nil {
			err = json.Unmarshal(data, &sbx)
		}
		return sbx, err
	}

	// One instance each for acme and beta, at once.
	var a, b api.Sandbox
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { a, errA = request(tok.acme, "sandbox.agent", "dash") })
	wg.Go(func() { b, errB = request(tok.beta, "sandbox.agent", "dash") })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("requests: %v; %v", errA, errB)
	}
	// Once serve has filled the pool, acme claims its member.
	deadline := time.Now().Add(time.Minute)
	for {
		_, data, err := call(tok.admin, "GET", "/v1/dashboard", nil)
		if err == nil && bytes.Contains(data, []byte(`"ready": 1`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool was not filled within a minute: %s %v", data, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	warm, err := request(tok.acme, "sandbox.pooled", "warm")
	if err != nil || !warm.FromPool {
		t.Fatalf("acme's claim: %+v %v", warm, err)
	}
	t.Logf("three instances, one claimed, after %s", time.Since(start).Round(time.Millisecond))
	// What must never be shown.
	secrets := map[string]string{"the operator's token": tok.admin, "acme's token": tok.acme, "beta's token": tok.beta,
		"acme's token hash": strings.TrimPrefix(tenants.Hash(tok.acme), "sha256:"), "the operator's token hash": strings.TrimPrefix(tenants.Hash(tok.admin), "sha256:")}
	for _, sbx := range []api.Sandbox{a, b, warm} {
		for k, v := range sbx.Env {
			if strings.HasSuffix(k, "_PASSWORD") || strings.HasSuffix(k, "_URL") {
				secrets[sbx.Address+" "+k] = v
			}
		}
	}
	noSecrets := func(what, text string) {
		t.Helper()
		for name, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("%s holds %s", what, name)
			}
		}
	}

	// The page carries no data and needs no token; the feed needs one.
	if status, data, err := call("", "GET", "/", nil); err != nil || status != 200 || bytes.Contains(data, []byte("sandbox.agent")) {
		t.Errorf("GET / without a token: %d %v", status, err)
	}
	if status, _, _ := call("", "GET", "/v1/dashboard", nil); status != 401 {
		t.Errorf("the feed without a token: %d, want 401", status)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900))
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox on; CI runs
		// as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	actx, stopBrowser := chromedp.NewExecAllocator(ctx, opts...)
	defer stopBrowser() // kills the browser and waits for it
	operator, closeOp := chromedp.NewContext(actx)
	defer closeOp()
	browserStart := time.Now()
	login := func(tab context.Context, token string) {
		t.Helper()
		if err := chromedp.Do(tab,
			chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(chromedp.ID("token")),
			chromedp.SendKeys(chromedp.ID("token"), token),
			chromedp.Click(chromedp.ID("signin")),
			chromedp.WaitVisible(chromedp.ID("board")),
		); err != nil {
			t.Fatalf("log in: %v", err)
		}
	}
	read := func(tab context.Context) pageState {
		t.Helper()
		p, err := chromedp.Run(tab, chromedp.Evaluate[pageState](readPage))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		return p
	}
	waitPage := func(tab context.Context, what string, ok func(pageState) bool) pageState {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			p := read(tab)
			if ok(p) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page never showed %s: viewer %q, rows %+v, events %+v, hidden %v", what, p.Viewer, p.Rows, p.Events, p.Hidden)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	login(operator, tok.admin)
	t.Logf("browser up, operator signed in after %s", time.Since(browserStart).Round(time.Millisecond))
	p := waitPage(operator, "both instances", func(p pageState) bool {
		_, okA := p.row(a.Address)
		_, okB := p.row(b.Address)
		return okA && okB
	})
	i, _ := p.row(a.Address)
	ra := p.Rows[i]
	first, ok := ttlSeconds(ra.TTL)
	if ra.Owner != "acme" || ra.Runtime != "docker" || !ok || first > 600 || first < 60 || ra.Age == "" {
		t.Errorf("acme's row in the operator's view: %+v (want owner acme, runtime docker, a TTL under 10m)", ra)
	}
	if j, _ := p.row(b.Address); p.Rows[j].Owner != "beta" {
		t.Errorf("beta's row: %+v", p.Rows[j])
	}
	if !strings.Contains(p.Viewer, "operator") {
		t.Errorf("viewer %q", p.Viewer)
	}
	// The pool's level (refilling or refilled) and the claim in the chart.
	waitPage(operator, "the pool and the claim", func(p pageState) bool {
		return len(p.Pools) == 1 && strings.HasPrefix(p.Pools[0], "sandbox.pooled") && strings.Contains(p.Latency, "claim: 1,")
	})
	// The TTL counts down between polls.
	waitPage(operator, "the TTL counting down", func(p pageState) bool {
		i, ok := p.row(a.Address)
		s, ok2 := ttlSeconds(p.Rows[i].TTL)
		return ok && ok2 && s < first
	})

	// acme's tab (its own sessionStorage): only acme's instance.
	acme, closeAcme := chromedp.NewContext(operator)
	defer closeAcme()
	login(acme, tok.acme)
	p = waitPage(acme, "acme's instances", func(p pageState) bool {
		_, okA := p.row(a.Address)
		_, okW := p.row(warm.Address)
		return okA && okW
	})
	if len(p.Rows) != 2 || p.Viewer != "tenant acme" || strings.Contains(p.HTML, b.Address) || strings.Contains(p.HTML, "beta") {
		t.Errorf("acme's view: viewer %q, rows %+v; beta's instance must not show", p.Viewer, p.Rows)
	}
	if len(p.Pools) != 0 || !strings.Contains(p.Latency, "claim: 1,") || !strings.Contains(p.Latency, "cold start: 1,") {
		t.Errorf("acme's view: pools %q, latency %q; want no pool, its own claim and cold start", p.Pools, p.Latency)
	}

	// Released through the API: the row goes, a released event shows.
	if status, data, err := call(tok.acme, "POST", api.PathRelease, api.ReleaseBody{Address: a.Address}); err != nil || status != 200 ||
		!bytes.Contains(data, []byte(`"released": true`)) {
		t.Fatalf("release: %d %s %v", status, data, err)
	}
	released := func(p pageState) bool { _, ok := p.row(a.Address); return !ok && p.event("released", a.Address) }
	p = waitPage(acme, "the release", released)
	noSecrets("acme's page", p.HTML)
	if strings.Contains(p.HTML, b.Address) {
		t.Errorf("acme's page names beta's instance")
	}
	p = waitPage(operator, "the release", released)
	if _, ok := p.row(b.Address); !ok {
		t.Errorf("beta's instance left the operator's view: %+v", p.Rows)
	}
	noSecrets("the operator's page", p.HTML)

	// The feed itself, as each sees it.
	for _, who := range []struct{ name, token string }{{"operator", tok.admin}, {"acme", tok.acme}, {"beta", tok.beta}} {
		status, data, err := call(who.token, "GET", "/v1/dashboard", nil)
		if err != nil || status != 200 {
			t.Fatalf("%s's feed: %d %v", who.name, status, err)
		}
		noSecrets(who.name+"'s feed", string(data))
		if who.name == "beta" && (bytes.Contains(data, []byte(a.Address)) || bytes.Contains(data, []byte("acme"))) {
			t.Errorf("beta's feed names acme's instance: %s", data)
		}
		if who.name != "operator" && bytes.Contains(data, []byte(`"pools"`)) {
			t.Errorf("%s's feed has the pools: %s", who.name, data)
		}
	}
	noSecrets("serve's log", logs.String())

	for _, addr := range []string{b.Address, warm.Address} {
		if status, _, err := call(tok.admin, "POST", api.PathRelease, api.ReleaseBody{Address: addr}); err != nil || status != 200 {
			t.Errorf("release %s: %d %v", addr, status, err)
		}
	}
	t.Logf("done after %s", time.Since(start).Round(time.Millisecond))
}
