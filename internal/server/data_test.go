package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// fakeData records calls and fails by snapshot name. The real operations
// run against the engine in package snapshot's tests; this pins the
// routes, body checks and error mapping.
type fakeData struct{ calls []string }

func (f *fakeData) op(verb string) func(context.Context, string, string) (*api.DataResult, error) {
	return func(_ context.Context, addr, name string) (*api.DataResult, error) {
		f.calls = append(f.calls, verb+" "+addr+" "+name)
		switch name {
		case "missing":
			return nil, fmt.Errorf("snapshot %q: %w", name, snapshot.ErrNotFound)
		case "vec":
			return nil, &snapshot.MissingFeatureError{Snapshot: name, Address: addr, Service: "postgres", Feature: "vector"}
		case "bad":
			return nil, &snapshot.ChecksumError{Snapshot: name, Service: "postgres"}
		case "busy":
			return nil, &state.LockedError{Path: "x.lock", Address: "sandbox.ci"}
		}
		return &api.DataResult{Address: addr, Generation: 2, Snapshot: name, Services: []string{"postgres"}}, nil
	}
}

func (f *fakeData) Snapshot(ctx context.Context, a, n string) (*api.DataResult, error) {
	return f.op("snapshot")(ctx, a, n)
}
func (f *fakeData) Restore(ctx context.Context, a, n string) (*api.DataResult, error) {
	return f.op("restore")(ctx, a, n)
}
func (f *fakeData) Reset(ctx context.Context, a, n string) (*api.DataResult, error) {
	return f.op("reset")(ctx, a, n)
}

func TestDataEndpoints(t *testing.T) {
	lib := &fakeLibrary{}
	fd := &lib.fakeData
	s, err := New(lib, "tok", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, body string
		status     int
		code       string
	}{
		{"/v1/snapshot", `{"address":"sandbox.ci","snapshot":"base"}`, http.StatusOK, ""},
		{"/v1/snapshot", `{"address":"sandbox.agent","key":"k1","snapshot":"base"}`, http.StatusOK, ""},
		{"/v1/snapshot", `{"address":"sandbox.ci"}`, http.StatusBadRequest, "invalid"},
		{"/v1/restore", `{"address":"sandbox.ci","snapshot":"missing"}`, http.StatusNotFound, "not_found"},
		{"/v1/restore", `{"address":"sandbox.ci","snapshot":"vec"}`, http.StatusUnprocessableEntity, "unavailable"},
		{"/v1/restore", `{"address":"sandbox.ci","snapshot":"bad"}`, http.StatusConflict, "conflict"},
		{"/v1/reset", `{"address":"sandbox.ci"}`, http.StatusOK, ""},
		// Another command holds the instance: busy, as for every call.
		{"/v1/reset", `{"address":"sandbox.ci","snapshot":"busy"}`, http.StatusConflict, "busy"},
		{"/v1/reset", `{"address":"not an address"}`, http.StatusBadRequest, "invalid"},
	}
	for _, tt := range tests {
		w, got := call(t, s, "POST", tt.path, "tok", tt.body)
		if w.Code != tt.status {
			t.Errorf("%s %s: status %d, want %d (%v)", tt.path, tt.body, w.Code, tt.status, got)
			continue
		}
		if tt.code != "" {
			if got["code"] != tt.code {
				t.Errorf("%s %s: body %v, want code %s", tt.path, tt.body, got, tt.code)
			}
		}
	}
	want := "snapshot sandbox.ci base,snapshot sandbox.agent[\"k1\"] base,restore sandbox.ci missing,restore sandbox.ci vec,restore sandbox.ci bad,reset sandbox.ci ,reset sandbox.ci busy"
	if got := fmt.Sprint(joinComma(fd.calls)); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	if w, _ := call(t, s, "POST", "/v1/reset", "", `{"address":"sandbox.ci"}`); w.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d", w.Code)
	}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}
