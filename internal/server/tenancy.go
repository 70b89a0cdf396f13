package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/kubeauth"
	"github.com/sandboxer/sandboxer/internal/tenants"
)

// SetTenants replaces the tenants whose tokens the server accepts beside
// the operator's (serve --tenants, and every reload of it). nil leaves
// only the operator's token. Safe while serving: a call sees the set of
// the moment it arrived, and a token gone from the new set is refused
// from the next call on.
func (s *Server) SetTenants(set *tenants.Set) { s.tenants.Store(set) }

// limiter is the per-tenant requests-per-minute bucket of one process:
// replicas each keep their own (a tenant behind N replicas may make up to
// N times its rate; the quotas on what it holds are kept in the state and
// hold across them).
type limiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// take spends one call of t's rate at now; when none is left it answers
// how long until one is.
func (l *limiter) take(t *sandboxer.Tenant, now time.Time) (ok bool, wait time.Duration, used int) {
	rpm := t.Quota.RequestsPerMinute
	if rpm <= 0 {
		return true, 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	b := l.buckets[t.Name]
	if b == nil {
		b = &bucket{tokens: float64(rpm), last: now}
		l.buckets[t.Name] = b
	}
	perSec := float64(rpm) / 60
	b.tokens = math.Min(float64(rpm), b.tokens+now.Sub(b.last).Seconds()*perSec)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0, 0
	}
	wait = time.Duration((1 - b.tokens) / perSec * float64(time.Second))
	return false, wait, rpm
}

// tenantFor is the tenant a token's digest belongs to.
func (s *Server) tenantFor(sum [32]byte) *sandboxer.Tenant {
	return s.tenants.Load().Lookup(sum)
}

// admitTenant spends one call of t's rate, answering 429 with
// Retry-After when it is used up; it reports whether the call may go on.
func (s *Server) admitTenant(w http.ResponseWriter, t *sandboxer.Tenant) bool {
	ok, wait, rpm := s.rate.take(t, time.Now())
	if ok {
		return true
	}
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, api.CodeRateLimited,
		fmt.Sprintf("rate limit requests_per_minute is %d; all %d used in the last minute: retry after %ds", rpm, rpm, secs), nil)
	return false
}

// withTenant is r with its context acting for t (nil: the operator).
func withTenant(r *http.Request, t *sandboxer.Tenant) *http.Request {
	if t == nil {
		return r
	}
	return r.WithContext(sandboxer.WithTenant(r.Context(), t))
}

// ServiceAccounts verifies Kubernetes ServiceAccount tokens
// (*kubeauth.Authenticator): the ServiceAccount a token is, or an error
// that is kubeauth.ErrUnauthenticated (401) or else means the cluster
// could not say (503).
type ServiceAccounts interface {
	Authenticate(ctx context.Context, token string) (kubeauth.Identity, error)
}

// SetServiceAccounts makes the server accept ServiceAccount tokens
// (serve --kube-auth), each acting for the tenant whose service_accounts
// admit it. Call it before serving.
func (s *Server) SetServiceAccounts(a ServiceAccounts) { s.accounts = a }

// serviceAccountTenant is the tenant a ServiceAccount token acts for,
// nil when the token is not one or no tenant admits its ServiceAccount
// (the caller answers 401). written is true when it has answered itself:
// 503, the cluster could not say. Neither the token nor its hash is
// logged; the ServiceAccount is.
func (s *Server) serviceAccountTenant(w http.ResponseWriter, r *http.Request, token string) (t *sandboxer.Tenant, written bool) {
	id, err := s.accounts.Authenticate(r.Context(), token)
	switch {
	case errors.Is(err, kubeauth.ErrUnauthenticated):
		return nil, false
	case err != nil:
		s.log.Error("cannot verify a ServiceAccount token", "error", err.Error())
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable,
			"cannot verify the ServiceAccount token now: the Kubernetes API server did not answer; retry", nil)
		return nil, true
	}
	t = s.tenants.Load().ServiceAccount(id.Namespace, id.Name)
	if t == nil {
		s.log.Info("no tenant admits this ServiceAccount", "serviceaccount", id.String())
		return nil, false
	}
	if rw, ok := w.(*recorder); ok {
		rw.account = id.String()
	}
	return t, false
}
