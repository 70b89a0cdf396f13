package server

import (
	"net/http"

	"github.com/sandboxer/sandboxer/internal/dashboard"
)

// ServeDashboard mounts the live dashboard: its page (the shell at / and
// its script and style, without a token: they carry no data) and its
// feed, GET /v1/dashboard, behind the bearer token like every route, so
// a tenant's feed is the tenant's view. Call it before serving.
func (s *Server) ServeDashboard(d *dashboard.Dashboard) {
	page := dashboard.Page()
	s.mux.Handle("GET /{$}", page)
	s.mux.Handle("GET "+dashboard.PathScript, page)
	s.mux.Handle("GET "+dashboard.PathStyle, page)
	s.mux.Handle("GET "+dashboard.PathIcon, page)
	s.mux.Handle("GET "+dashboard.PathFeed, s.authed(func(w http.ResponseWriter, r *http.Request) {
		f, err := d.Build(r.Context())
		if err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, f)
	}))
}

// quiet reports whether a successful call to path is logged at debug
// level only: the dashboard polls its feed every two seconds per open
// tab. Refusals and failures are logged as every call's are.
func quiet(path string) bool {
	switch path {
	case dashboard.PathFeed, dashboard.PathPage, dashboard.PathScript, dashboard.PathStyle, dashboard.PathIcon:
		return true
	}
	return false
}
