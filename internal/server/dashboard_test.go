package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/dashboard"
)

// dashLib is the fake library with the pool calls the dashboard reads.
type dashLib struct{ *fakeLibrary }

func (dashLib) Pools() []string { return nil }

func (dashLib) PoolStatus(context.Context, string) (*api.PoolStatus, error) { return nil, nil }

// The page needs no token and carries no data; the feed needs the token
// as every route does; its successful polls stay out of the info log.
func TestDashboardRoutes(t *testing.T) {
	lib := &fakeLibrary{}
	var logs strings.Builder
	s, err := New(lib, "t0ken", newLogger(&logs), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.ServeDashboard(dashboard.New(dashLib{lib}, dashboard.NewRecorder()))

	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || strings.Contains(w.Body.String(), "sandbox.agent") {
		t.Errorf("GET / without a token: %d %s", w.Code, w.Body)
	}
	if w, _ := call(t, s, "GET", dashboard.PathFeed, "", ""); w.Code != 401 {
		t.Errorf("the feed without a token: %d", w.Code)
	}
	w, m := call(t, s, "GET", dashboard.PathFeed, "t0ken", "")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"address": "sandbox.agent[\"a\"]"`) || m["viewer"] == nil {
		t.Errorf("the feed: %d %s", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), `"pw"`) {
		t.Errorf("the feed holds a password: %s", w.Body)
	}
	if w, _ := call(t, s, "POST", "/", "t0ken", "{}"); w.Code == 200 {
		t.Errorf("POST /: %d", w.Code)
	}
	if strings.Contains(logs.String(), "path=/v1/dashboard status=200") || strings.Contains(logs.String(), "path=/ status=200") {
		t.Errorf("a successful poll is in the info log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "path=/v1/dashboard status=401") {
		t.Errorf("the refused poll is not logged:\n%s", logs.String())
	}
}
