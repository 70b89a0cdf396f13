package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/kubeauth"
	"github.com/sandboxer/sandboxer/internal/tenants"
)

// fakeAccounts stands for the cluster: tokens it vouches for, and a
// switch to make it unreachable.
type fakeAccounts struct {
	ids   map[string]kubeauth.Identity
	down  atomic.Bool
	calls atomic.Int32
}

func (f *fakeAccounts) Authenticate(_ context.Context, token string) (kubeauth.Identity, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return kubeauth.Identity{}, fmt.Errorf("%w: connection refused", kubeauth.ErrUnavailable)
	}
	id, ok := f.ids[token]
	if !ok {
		return kubeauth.Identity{}, kubeauth.ErrUnauthenticated
	}
	return id, nil
}

// A ServiceAccount token acts for the tenant that admits its
// ServiceAccount; one no rule admits, or one the cluster does not vouch
// for, is 401; a cluster that cannot answer is 503 with Retry-After;
// the operator's and the tenants' hashed tokens never ask the cluster;
// the log names the ServiceAccount, never the token.
func TestServiceAccountTokens(t *testing.T) {
	const admin, acmeTok = "admin-token-x1", "acme-token-y2"
	const runnerTok, otherTok, strangerTok, forgedTok = "sa-token-runner", "sa-token-other", "sa-token-stranger", "sa-token-forged"
	lib := &tenantLibrary{}
	var logs bytes.Buffer
	s, err := New(lib, admin, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	set, diags := tenants.Parse([]byte(`
tenant "acme" {
  tokens = ["`+tenants.Hash(acmeTok)+`"]
}
tenant "runner" {
  service_accounts = ["agents:runner"]
}
tenant "agents" {
  service_accounts = ["agents:*"]
}
`), "t.hcl", []string{"agent"})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	s.SetTenants(set)
	accounts := &fakeAccounts{ids: map[string]kubeauth.Identity{
		runnerTok: {Namespace: "agents", Name: "runner"}, otherTok: {Namespace: "agents", Name: "other"},
		strangerTok: {Namespace: "elsewhere", Name: "runner"},
	}}
	do := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", api.PathRequest, strings.NewReader(`{"address":"sandbox.agent","key":"k"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	// Off until SetServiceAccounts: a ServiceAccount token is 401.
	if rec := do(runnerTok); rec.Code != http.StatusUnauthorized {
		t.Errorf("before SetServiceAccounts: %d, want 401", rec.Code)
	}
	s.SetServiceAccounts(accounts)
	for token, want := range map[string]string{admin: "(operator)", acmeTok: "acme"} {
		lib.tenant = ""
		if rec := do(token); rec.Code != 200 || lib.tenant != want {
			t.Errorf("token of %s: %d, acted for %q", want, rec.Code, lib.tenant)
		}
	}
	if n := accounts.calls.Load(); n != 0 {
		t.Errorf("the operator's and a tenant's token asked the cluster %d times", n)
	}
	for token, want := range map[string]string{runnerTok: "runner", otherTok: "agents"} {
		lib.tenant = ""
		if rec := do(token); rec.Code != 200 || lib.tenant != want {
			t.Errorf("ServiceAccount token for %s: %d, acted for %q", want, rec.Code, lib.tenant)
		}
	}
	for _, token := range []string{strangerTok, forgedTok} {
		rec := do(token)
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"unauthorized"`) {
			t.Errorf("%s: %d %s, want 401", token, rec.Code, rec.Body)
		}
	}
	accounts.down.Store(true)
	rec := do(runnerTok)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"unavailable"`) {
		t.Errorf("cluster down: %d %s, want 503 unavailable with Retry-After", rec.Code, rec.Body)
	}
	if rec := do(acmeTok); rec.Code != 200 {
		t.Errorf("a tenant's hashed token with the cluster down: %d, want 200", rec.Code)
	}
	out := logs.String()
	if !strings.Contains(out, "serviceaccount=agents/runner") || !strings.Contains(out, `"no tenant admits this ServiceAccount" serviceaccount=elsewhere/runner`) {
		t.Errorf("the log does not name the ServiceAccounts:\n%s", out)
	}
	for _, secret := range []string{runnerTok, otherTok, strangerTok, forgedTok, acmeTok, admin} {
		if strings.Contains(out, secret) || strings.Contains(out, strings.TrimPrefix(tenants.Hash(secret), "sha256:")) {
			t.Errorf("the log holds a token or its hash")
		}
	}
}
