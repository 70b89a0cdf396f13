package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/records"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/state"
)

// fakeLibrary answers as the library would, its refusals the raw errors
// of the packages underneath: the server classifies them the one way
// (sandboxer.Classify).
type fakeLibrary struct {
	fakeData
	lastKey   string
	calls     int
	levelsErr error
	unready   map[string]error
}

func (f *fakeLibrary) Request(ctx context.Context, address string, o sandboxer.RequestOptions) (*api.Sandbox, error) {
	f.calls++
	f.lastKey = o.Key
	switch o.Key {
	case "bad-feature":
		return nil, &ondemand.Error{Kind: ondemand.NotAllowed, Msg: `postgres feature "plpython3u" is not on the allowlist; allowed: citext, vector`, Allowed: []string{"citext", "vector"}}
	case "nope":
		return nil, &ondemand.Error{Kind: ondemand.NotFound, Msg: `no sandbox block "nope"`}
	case "panic":
		panic("boom with a secret s3cr3t")
	}
	return &api.Sandbox{Address: `sandbox.agent["` + o.Key + `"]`, Generation: 1,
		Env: map[string]string{"SANDBOXER_REDIS_PASSWORD": "pw"}}, nil
}

func (f *fakeLibrary) Release(ctx context.Context, address, key string) (bool, error) {
	return key == "live", nil
}

func (f *fakeLibrary) Extend(ctx context.Context, address, key, ttl string) (*api.Instance, error) {
	in := records.Instance(&state.Record{Address: address, Generation: 1, ExpiresAt: time.Unix(0, 0),
		Credentials: map[string]state.Credentials{"redis": {Host: "127.0.0.1", Port: 1, Password: "pw"}}})
	return &in, nil
}

func (f *fakeLibrary) Fork(ctx context.Context, address string, o sandboxer.ForkOptions) (*api.ForkResult, error) {
	return nil, &api.Error{Code: api.CodeNotFound, Message: address + " is not provisioned; request it first"}
}

func (f *fakeLibrary) Database(ctx context.Context, address string, o sandboxer.DatabaseOptions) (*api.Sandbox, error) {
	return &api.Sandbox{Address: address + `["sbx-databases"]`, Env: map[string]string{"SANDBOXER_POSTGRES_DB": "sbxt_1", "SANDBOXER_POSTGRES_PASSWORD": "pw"}}, nil
}

func (f *fakeLibrary) DropDatabase(ctx context.Context, address, name string) error { return nil }

// Levels: two blocks, one with a pool; levelsErr fails the read.
func (f *fakeLibrary) Levels(ctx context.Context) ([]sandboxer.Level, error) {
	if f.levelsErr != nil {
		return nil, f.levelsErr
	}
	return []sandboxer.Level{{Block: "sandbox.agent", Instances: 3}, {Block: "sandbox.warm", Instances: 1, PoolReady: 2, PoolSize: 4}}, nil
}

// Ready fails the checks named in unready.
func (f *fakeLibrary) Ready(ctx context.Context) []sandboxer.ReadyCheck {
	out := []sandboxer.ReadyCheck{{Name: "state"}, {Name: "runtime docker"}}
	for i := range out {
		out[i].Err = f.unready[out[i].Name]
	}
	return out
}

// Sandboxes has one damaged record beside the readable one.
func (f *fakeLibrary) Sandboxes(ctx context.Context) (*api.SandboxList, error) {
	in := records.Instance(&state.Record{Address: `sandbox.agent["a"]`, OnDemand: true,
		Credentials: map[string]state.Credentials{"redis": {Host: "127.0.0.1", Port: 1, Password: "pw"}}})
	return &api.SandboxList{Sandboxes: []api.Instance{in},
		Damaged: []api.DamagedRecord{{Address: `sandbox.agent["b"]`, Error: `record sandbox.agent["b"] is not valid JSON`}}}, nil
}

func call(t *testing.T, h http.Handler, method, path, token, body string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: response is not a JSON object: %q", method, path, w.Body.String())
	}
	return w, m
}

func TestAPI(t *testing.T) {
	fb := &fakeLibrary{}
	var logs strings.Builder
	s, err := New(fb, "t0ken", newLogger(&logs), nil)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"address":"sandbox.agent","key":"` + strings.Repeat("x", MaxBody) + `"}`
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
		want                            string // substring of the body
	}{
		{"healthz needs no token", "GET", "/healthz", "", "", 200, `"status": "ok"`},
		{"no token", "POST", "/v1/request", "", `{}`, 401, "bearer token"},
		{"wrong token", "POST", "/v1/request", "t0kem", `{}`, 401, "bearer token"},
		{"wrong token on list", "GET", "/v1/sandboxes", "x", ``, 401, "bearer token"},
		{"request", "POST", "/v1/request", "t0ken", `{"address":"sandbox.agent","key":"k","extensions":{"postgres":["vector"]},"ttl":"1h"}`, 200, `"reused": false`},
		{"malformed JSON", "POST", "/v1/request", "t0ken", `{"address":`, 400, "malformed JSON"},
		{"not an object", "POST", "/v1/request", "t0ken", `[1]`, 400, "malformed JSON"},
		{"unknown field", "POST", "/v1/request", "t0ken", `{"adress":"x"}`, 400, `unknown field \"adress\"`},
		{"two objects", "POST", "/v1/request", "t0ken", `{} {}`, 400, "trailing data"},
		{"empty body", "POST", "/v1/request", "t0ken", ``, 400, "empty request body"},
		{"oversized body", "POST", "/v1/request", "t0ken", big, 413, "larger than 65536 bytes"},
		{"unknown address", "POST", "/v1/request", "t0ken", `{"address":"sandbox.nope","key":"nope"}`, 404, `no sandbox block`},
		{"unallowed feature", "POST", "/v1/request", "t0ken", `{"address":"sandbox.agent","key":"bad-feature"}`, 422, `"allowed": [`},
		{"panic", "POST", "/v1/request", "t0ken", `{"address":"sandbox.agent","key":"panic"}`, 500, `"error": "internal error"`},
		{"release", "POST", "/v1/release", "t0ken", `{"address":"sandbox.agent","key":"live"}`, 200, `"released": true`},
		{"release nothing", "POST", "/v1/release", "t0ken", `{"address":"sandbox.agent","key":"gone"}`, 200, `"released": false`},
		{"extend", "POST", "/v1/extend", "t0ken", `{"address":"sandbox.agent","key":"k","ttl":"1h"}`, 200, `"expires_at": "1970-01-01T00:00:00Z"`},
		{"list", "GET", "/v1/sandboxes", "t0ken", ``, 200, `"address": "sandbox.agent[\"a\"]"`},
		{"list reports a damaged record beside the rest", "GET", "/v1/sandboxes", "t0ken", ``, 200, `"damaged": [`},
		{"wrong method", "GET", "/v1/request", "t0ken", ``, 405, "not allowed"},
		{"unknown route", "GET", "/v2/x", "t0ken", ``, 404, "no route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := call(t, s, tc.method, tc.path, tc.token, tc.body)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("got %d %s, want %d containing %q", w.Code, w.Body.String(), tc.status, tc.want)
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if strings.Contains(w.Body.String(), "goroutine") || strings.Contains(w.Body.String(), "s3cr3t") {
				t.Errorf("response leaks internals: %s", w.Body.String())
			}
		})
	}
	if got := fb.lastKey; got != "panic" {
		t.Errorf("last request's key %q", got)
	}
	// Lists and extends never show a password.
	for _, path := range []string{"/v1/sandboxes", "/v1/extend"} {
		method, body := "GET", ""
		if path == "/v1/extend" {
			method, body = "POST", `{"address":"sandbox.agent","key":"k","ttl":"1h"}`
		}
		w, _ := call(t, s, method, path, "t0ken", body)
		if strings.Contains(w.Body.String(), `"pw"`) {
			t.Errorf("%s shows a password: %s", path, w.Body.String())
		}
	}
	if strings.Contains(logs.String(), "pw") || strings.Contains(logs.String(), "t0ken") || strings.Contains(logs.String(), "goroutine ") {
		t.Errorf("logs leak: %s", logs.String())
	}
	if !strings.Contains(logs.String(), `msg=call method=POST path=/v1/request status=200`) {
		t.Errorf("no access log line: %s", logs.String())
	}
}

func TestNewRefusesEmptyToken(t *testing.T) {
	for _, tok := range []string{"", "  \n"} {
		if _, err := New(&fakeLibrary{}, tok, nil, nil); err == nil {
			t.Errorf("New accepted token %q", tok)
		}
	}
}

func newLogger(w *strings.Builder) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// slowBroker reports when a call has started and whether its context
// ended during it.
type slowBroker struct {
	fakeLibrary
	started chan struct{}
	done    chan error
}

func (b *slowBroker) Request(ctx context.Context, address string, o sandboxer.RequestOptions) (*api.Sandbox, error) {
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		b.done <- ctx.Err()
	case <-time.After(300 * time.Millisecond):
		b.done <- nil
	}
	return &api.Sandbox{Address: "sandbox.a[\"k\"]"}, nil
}

// A client that hangs up does not abort a provision; the server's base
// context (a second SIGTERM) does. The client hangs up only once the call
// has reached the broker: a fixed client timeout could fire before the
// server read the request, and the broker would never be called.
func TestCallsOutliveTheirClient(t *testing.T) {
	b := &slowBroker{started: make(chan struct{}, 1), done: make(chan error, 1)}
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	s, err := New(b, "tok", nil, base)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	wait := func(what string) error {
		select {
		case err := <-b.done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the broker's call did not end", what)
			return nil
		}
	}
	// post sends a request, then runs during once the broker has it.
	post := func(during func()) {
		ctx, hangUp := context.WithCancel(context.Background())
		defer hangUp()
		go func() {
			select {
			case <-b.started:
				during()
				hangUp()
			case <-time.After(30 * time.Second):
				hangUp()
			}
		}()
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/request", strings.NewReader(`{"address":"sandbox.a","key":"k"}`))
		req.Header.Set("Authorization", "Bearer tok")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	post(func() {})
	if err := wait("client hung up"); err != nil {
		t.Errorf("the call was cancelled when its client hung up: %v", err)
	}
	post(cancelBase)
	if err := wait("base cancelled"); err == nil {
		t.Error("cancelling the base context did not cancel the call")
	}
}
