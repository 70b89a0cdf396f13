package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
)

// readyTimeout bounds one readiness check: a probe that hangs is as bad
// as one that fails.
const readyTimeout = 5 * time.Second

// Drain marks the start of shutdown: /readyz answers 503 from now on, so
// a load balancer (a Kubernetes Service) stops sending new work while the
// calls in flight finish.
func (s *Server) Drain() { s.draining.Store(true) }

// readyz answers 200 when this replica can take work: the state backend
// answers a read and every runtime the configuration uses is reachable;
// else 503 naming the failed checks (with their codes, never an error's
// text: the route is open). The reasons go to the log when they change.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, api.Ready{Status: "unready", Failed: []api.ReadyFail{{Check: "shutdown"}}})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := s.lib.Ready(ctx)
	out := api.Ready{Status: "ready"}
	var why []string
	for _, c := range checks {
		if c.Err == nil {
			continue
		}
		out.Failed = append(out.Failed, api.ReadyFail{Check: c.Name, Code: sandboxer.Classify(c.Err).Code})
		why = append(why, c.Name+": "+c.Err.Error())
	}
	s.noteReadiness(why)
	if len(out.Failed) > 0 {
		out.Status = "unready"
		writeJSON(w, http.StatusServiceUnavailable, out)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// noteReadiness logs when the failed checks change (probes come every few
// seconds; the log says so once).
func (s *Server) noteReadiness(why []string) {
	now := strings.Join(why, "; ")
	prev := s.unready.Swap(&now)
	if prev != nil && *prev == now || prev == nil && now == "" {
		return
	}
	if now == "" {
		s.log.Info("ready")
		return
	}
	s.log.Warn("not ready", "failed", now)
}
