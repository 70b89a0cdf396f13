package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/internal/tenants"
)

// /metrics: the operator's token only (none: 401, a tenant's: 404);
// calls counted by route, status and code; request latencies from the
// library's events by block and how they were answered (a pool fill's
// own provisions are not requests); levels read at scrape time; no key,
// tenant, address or credential in any label.
func TestMetrics(t *testing.T) {
	const admin, acmeTok = "admin-token-m1", "acme-token-m2"
	lib := &fakeLibrary{}
	s, err := New(lib, admin, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics([]string{"sandbox.agent", "sandbox.warm"})
	s.ServeMetrics(m)
	set, diags := tenants.Parse([]byte("tenant \"acme\" {\n  tokens = [\""+tenants.Hash(acmeTok)+"\"]\n}\n"), "t.hcl", []string{"agent", "warm"})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	s.SetTenants(set)

	var sink events.Sink = events.Multi{events.Discard{}, m}
	sink.Emit(events.Event{Event: events.Provisioned, Address: `sandbox.agent["dev-7"]`, Key: "dev-7", ElapsedMS: 1500})
	sink.Emit(events.Event{Event: events.Reused, Address: `sandbox.agent["dev-7"]`, Key: "dev-7", ElapsedMS: 2})
	sink.Emit(events.Event{Event: events.PoolClaimed, Address: `sandbox.warm["acme.w1"]`, Key: "acme.w1", Owner: "acme", ElapsedMS: 40})
	sink.Emit(events.Event{Event: events.Provisioned, Address: `sandbox.warm["~pool-0a1b"]`, Key: "~pool-0a1b"})
	sink.Emit(events.Event{Event: events.Failed, Address: `sandbox.nope["x"]`, Key: "x", Reason: "boom"})
	m.ObserveReap(&sandboxer.ReapReport{Expired: []string{`sandbox.agent["old"]`}, Databases: map[string][]string{"h": {"a", "b"}}}, nil)
	m.SetJanitorLeader(true)

	for _, c := range []struct {
		token string
		body  string
		want  int
	}{
		{admin, `{"address":"sandbox.agent","key":"dev-7"}`, 200},
		{admin, `{"address":"sandbox.agent","key":"bad-feature"}`, http.StatusUnprocessableEntity},
		{acmeTok, `{"address":"sandbox.agent","key":"k"}`, 200},
	} {
		if w, _ := call(t, s, "POST", api.PathRequest, c.token, c.body); w.Code != c.want {
			t.Fatalf("request %s: %d, want %d", c.body, w.Code, c.want)
		}
	}
	call(t, s, "GET", "/v1/secret-path-dev-7", admin, "")

	scrape := func(token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", api.PathMetrics, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	if w := scrape(""); w.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", w.Code)
	}
	if w := scrape(acmeTok); w.Code != http.StatusNotFound {
		t.Errorf("a tenant's token: %d, want 404", w.Code)
	}
	w := scrape(admin)
	if w.Code != 200 {
		t.Fatalf("operator's scrape: %d %s", w.Code, w.Body)
	}
	out := w.Body.String()
	for _, want := range []string{
		`sandboxer_http_requests_total{code="",route="POST /v1/request",status="200"} 2`,
		`sandboxer_http_requests_total{code="not_allowed",route="POST /v1/request",status="422"} 1`,
		`sandboxer_http_requests_total{code="not_found",route="unmatched",status="404"} 1`,
		`sandboxer_http_requests_total{code="unauthorized",route="GET /metrics",status="401"} 1`,
		`sandboxer_errors_total{code="not_allowed"} 1`,
		`sandboxer_request_duration_seconds_count{block="sandbox.agent",event="provisioned"} 1`,
		`sandboxer_request_duration_seconds_sum{block="sandbox.agent",event="provisioned"} 1.5`,
		`sandboxer_request_duration_seconds_count{block="sandbox.agent",event="reused"} 1`,
		`sandboxer_request_duration_seconds_count{block="sandbox.warm",event="pool_claimed"} 1`,
		`sandboxer_events_total{block="sandbox.warm",event="provisioned"} 1`,
		`sandboxer_events_total{block="other",event="failed"} 1`,
		`sandboxer_reap_passes_total{outcome="ok"} 1`,
		`sandboxer_reaped_total{what="expired"} 1`,
		`sandboxer_reaped_total{what="database"} 2`,
		`sandboxer_janitor_leader 1`,
		`sandboxer_instances{block="sandbox.agent"} 3`,
		`sandboxer_pool_ready{block="sandbox.warm"} 2`,
		`sandboxer_pool_size{block="sandbox.warm"} 4`,
		`sandboxer_state_up 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("no %s in the scrape", want)
		}
	}
	if strings.Contains(out, `sandboxer_request_duration_seconds_count{block="sandbox.warm",event="provisioned"}`) {
		t.Errorf("a pool fill's provision counted as a request's latency")
	}
	for _, secret := range []string{"dev-7", "acme", "~pool", admin, acmeTok, "sandbox.nope", "secret-path"} {
		if strings.Contains(out, secret) {
			t.Errorf("the scrape holds %q:\n%s", secret, out)
		}
	}

	lib.levelsErr = errors.New("state unreachable")
	if out := scrape(admin).Body.String(); !strings.Contains(out, "sandboxer_state_up 0\n") || strings.Contains(out, "sandboxer_instances{") {
		t.Errorf("a failed levels read: want sandboxer_state_up 0 and no levels:\n%s", out)
	}
}

// /readyz: open; 200 while the library's checks pass, 503 naming the
// failed ones (with a code, never the error's text), and 503 from Drain
// on whatever the checks say.
func TestReadyz(t *testing.T) {
	lib := &fakeLibrary{}
	s, err := New(lib, "tok", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, body := call(t, s, "GET", api.PathReady, "", "")
	if w.Code != 200 || body["status"] != "ready" {
		t.Fatalf("readyz: %d %v", w.Code, body)
	}
	lib.unready = map[string]error{"runtime docker": &sandboxer.Error{Code: sandboxer.CodeEngineUnreachable, Message: "cannot reach unix:///secret.sock"}}
	w, _ = call(t, s, "GET", api.PathReady, "", "")
	if w.Code != http.StatusServiceUnavailable || strings.TrimSpace(w.Body.String()) != strings.TrimSpace(`{
  "status": "unready",
  "failed": [
    {
      "check": "runtime docker",
      "code": "engine_unreachable"
    }
  ]
}`) {
		t.Errorf("engine down: %d %s", w.Code, w.Body)
	}
	lib.unready = nil
	s.Drain()
	w, _ = call(t, s, "GET", api.PathReady, "", "")
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"check": "shutdown"`) {
		t.Errorf("draining: %d %s", w.Code, w.Body)
	}
	if w, _ := call(t, s, "GET", api.PathHealth, "", ""); w.Code != 200 {
		t.Errorf("healthz while draining: %d (liveness is not readiness)", w.Code)
	}
}
