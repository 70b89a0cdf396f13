package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/tenants"
)

// Library is what the API serves: the library's calls, whose errors come
// classified (sandboxer.Classify); the server only maps their codes to
// HTTP statuses. *sandboxer.Sandboxer implements it.
type Library interface {
	Request(ctx context.Context, address string, o sandboxer.RequestOptions) (*api.Sandbox, error)
	Release(ctx context.Context, address, key string) (bool, error)
	Extend(ctx context.Context, address, key, ttl string) (*api.Instance, error)
	Sandboxes(ctx context.Context) (*api.SandboxList, error)
	Snapshot(ctx context.Context, address, name string) (*api.DataResult, error)
	Restore(ctx context.Context, address, name string) (*api.DataResult, error)
	Reset(ctx context.Context, address, name string) (*api.DataResult, error)
	Database(ctx context.Context, address string, o sandboxer.DatabaseOptions) (*api.Sandbox, error)
	DropDatabase(ctx context.Context, address, name string) error
	Fork(ctx context.Context, address string, o sandboxer.ForkOptions) (*api.ForkResult, error)
	// Levels and Ready serve operations: /metrics' gauges, /readyz.
	Levels(ctx context.Context) ([]sandboxer.Level, error)
	Ready(ctx context.Context) []sandboxer.ReadyCheck
}

var _ Library = (*sandboxer.Sandboxer)(nil)

// MaxBody bounds a request body; larger ones get 413.
const MaxBody = api.MaxBody

// Server is the API's http.Handler.
type Server struct {
	lib   Library
	token [32]byte // SHA-256 of the operator's bearer token
	// tenants are the other tokens' owners (SetTenants); nil: none.
	tenants atomic.Pointer[tenants.Set]
	// accounts verifies ServiceAccount tokens (SetServiceAccounts); nil:
	// none are accepted.
	accounts ServiceAccounts
	rate     limiter
	log      *slog.Logger
	mux      *http.ServeMux
	base     context.Context
	// metrics count calls once ServeMetrics mounted them; nil: none.
	metrics *Metrics
	// draining: shutdown began (Drain), /readyz answers 503.
	draining atomic.Bool
	// unready is the failed checks /readyz last saw, to log changes.
	unready atomic.Pointer[string]
}

// New returns the API handler. token must not be empty. logger gets one
// record per call (method, path, status, duration, address), never a body
// or a credential; nil discards them.
// base bounds every library call instead of the client's connection: a
// client that hangs up mid-provision does not abort it (its retry then
// finds the cache hit), while cancelling base (a second SIGTERM) does.
// A nil base never ends.
func New(lib Library, token string, logger *slog.Logger, base context.Context) (*Server, error) {
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("no API token: set SANDBOXER_API_TOKEN or --token-file")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if base == nil {
		base = context.Background()
	}
	s := &Server{lib: lib, token: sha256.Sum256([]byte(token)), log: logger, mux: http.NewServeMux(), base: base}
	s.tenants.Store(nil)
	s.mux.HandleFunc("GET "+api.PathHealth, s.healthz)
	s.mux.HandleFunc("GET "+api.PathReady, s.readyz)
	s.mux.Handle("POST "+api.PathRequest, s.authed(s.request))
	s.mux.Handle("POST "+api.PathRelease, s.authed(s.release))
	s.mux.Handle("POST "+api.PathExtend, s.authed(s.extend))
	s.mux.Handle("GET "+api.PathSandboxes, s.authed(s.list))
	s.mux.Handle("POST "+api.PathSnapshot, s.authed(s.dataCall(lib.Snapshot, true)))
	s.mux.Handle("POST "+api.PathRestore, s.authed(s.dataCall(lib.Restore, true)))
	s.mux.Handle("POST "+api.PathReset, s.authed(s.dataCall(lib.Reset, false)))
	s.mux.Handle("POST "+api.PathDatabases, s.authed(s.database))
	s.mux.Handle("POST "+api.PathFork, s.authed(s.fork))
	s.mux.Handle("POST "+api.PathDropDatabase, s.authed(s.dropDatabase))
	return s, nil
}

// Handle serves h at pattern behind the bearer token, as every route but
// /healthz and /readyz (serve mounts the MCP server's streamable HTTP
// endpoint). Call it before serving.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, s.authed(h.ServeHTTP)) }

// ServeHTTP logs the call and turns a panic into a plain 500.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &recorder{ResponseWriter: w, status: http.StatusOK}
	var route string // the route's pattern, the metrics' label
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
			if !rw.wrote {
				writeError(rw, http.StatusInternalServerError, api.CodeInternal, "internal error", nil)
			}
		}
		if s.metrics != nil {
			s.metrics.call(route, rw.status, rw.code)
		}
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", rw.status, "duration", time.Since(start).Round(time.Microsecond)}
		if rw.tenant != "" {
			attrs = append(attrs, "tenant", rw.tenant)
		}
		if rw.account != "" {
			attrs = append(attrs, "serviceaccount", rw.account)
		}
		if rw.addr != "" {
			attrs = append(attrs, "address", rw.addr)
		}
		level := slog.LevelInfo
		if rw.status < 400 && quiet(r.URL.Path) {
			level = slog.LevelDebug
		}
		s.log.Log(r.Context(), level, "call", attrs...)
	}()
	// Unknown paths and methods answer in JSON too.
	if _, route = s.mux.Handler(r); route == "" {
		route = "unmatched" // not the path: a client could name any
		s.notFoundOrMethod(rw, r)
		return
	}
	s.mux.ServeHTTP(rw, r)
}

func (s *Server) notFoundOrMethod(w http.ResponseWriter, r *http.Request) {
	for _, route := range []string{api.PathHealth, api.PathRequest, api.PathRelease, api.PathExtend, api.PathSandboxes} {
		if r.URL.Path == route {
			writeError(w, http.StatusMethodNotAllowed, api.CodeInvalid, fmt.Sprintf("method %s is not allowed on %s", r.Method, route), nil)
			return
		}
	}
	writeError(w, http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("no route %s", r.URL.Path), nil)
}

// authed requires "Authorization: Bearer <token>": the operator's,
// compared in constant time (over fixed-length digests, so the length
// leaks nothing either), or a tenant's, found by its digest (the token
// itself is never kept), or, with SetServiceAccounts, a ServiceAccount
// token the cluster vouches for whose ServiceAccount a tenant admits
// (asked only when the digest matched nothing). A tenant's call acts for
// it (sandboxer.WithTenant) and spends its rate.
func (s *Server) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got = strings.TrimSpace(got)
		sum := sha256.Sum256([]byte(got))
		admin := subtle.ConstantTimeCompare(sum[:], s.token[:]) == 1
		var t *sandboxer.Tenant
		if !admin {
			t = s.tenantFor(sum)
		}
		if ok && !admin && t == nil && s.accounts != nil && got != "" {
			var written bool
			if t, written = s.serviceAccountTenant(w, r, got); written {
				return
			}
		}
		if !ok || (!admin && t == nil) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxer"`)
			writeError(w, http.StatusUnauthorized, api.CodeUnauthorized, "missing or wrong bearer token", nil)
			return
		}
		if t != nil {
			if rw, ok := w.(*recorder); ok {
				rw.tenant = t.Name
			}
			if !s.admitTenant(w, t) {
				return
			}
		}
		h(w, withTenant(r, t))
	})
}

// recorder remembers the status and the address a call was about, for the
// log line.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	addr   string
	tenant string
	// account is the ServiceAccount ("ns/name") a call authenticated as.
	account string
	code    api.Code // of an error answer
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (flushes of the MCP endpoint's event stream).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes a flush on: the MCP endpoint streams events.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// noteAddr puts the address into the log record, cut short (it comes
// from the client; the log handler quotes what needs quoting).
func noteAddr(w http.ResponseWriter, addr string) {
	if len(addr) > 200 {
		addr = addr[:200] + "…"
	}
	if r, ok := w.(*recorder); ok && addr != "" {
		r.addr = addr
	}
}

// callContext is the context of one broker call: values from the request,
// cancellation from base only.
func (s *Server) callContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(s.base, cancel)
	return ctx, func() { stop(); cancel() }
}

func writeError(w http.ResponseWriter, status int, code api.Code, msg string, allowed []string) {
	if r, ok := w.(*recorder); ok {
		r.code = code
	}
	writeJSON(w, status, api.ErrorBody{Error: msg, Code: code, Allowed: allowed})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
