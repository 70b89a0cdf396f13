package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/tenants"
)

// tenantLibrary notes the tenant each call acted for.
type tenantLibrary struct {
	fakeLibrary
	tenant string
}

func (f *tenantLibrary) Request(ctx context.Context, address string, o sandboxer.RequestOptions) (*api.Sandbox, error) {
	f.tenant = "(operator)"
	if t := sandboxer.TenantOf(ctx); t != nil {
		f.tenant = t.Name
	}
	return f.fakeLibrary.Request(ctx, address, o)
}

// A tenant's token acts for its tenant, the operator's for none; an
// unknown or revoked one is 401; the body limit holds for tenants; the
// rate answers 429 with Retry-After; no log line holds a token or hash.
func TestTenantTokens(t *testing.T) {
	const admin, acmeTok, betaTok = "admin-token-x1", "acme-token-y2", "beta-token-z3"
	lib := &tenantLibrary{}
	var logs bytes.Buffer
	s, err := New(lib, admin, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	file := func(withBeta bool) *tenants.Set {
		src := "tenant \"acme\" {\n  tokens = [\"" + tenants.Hash(acmeTok) + "\"]\n  quota {\n    requests_per_minute = 3\n  }\n}\n"
		if withBeta {
			src += "tenant \"beta\" {\n  tokens = [\"" + tenants.Hash(betaTok) + "\"]\n}\n"
		}
		set, diags := tenants.Parse([]byte(src), "t.hcl", []string{"agent"})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		return set
	}
	s.SetTenants(file(true))
	do := func(token, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", api.PathRequest, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	const body = `{"address":"sandbox.agent","key":"k"}`
	for token, want := range map[string]string{admin: "(operator)", acmeTok: "acme", betaTok: "beta"} {
		lib.tenant = ""
		if rec := do(token, body); rec.Code != 200 || lib.tenant != want {
			t.Errorf("token of %s: %d, acted for %q", want, rec.Code, lib.tenant)
		}
	}
	for _, tok := range []string{"", "acme-token-y", tenants.Hash(acmeTok), strings.TrimPrefix(tenants.Hash(acmeTok), "sha256:")} {
		if rec := do(tok, body); rec.Code != http.StatusUnauthorized {
			t.Errorf("token %q: %d, want 401 (a hash is not a token)", tok, rec.Code)
		}
	}
	if rec := do(betaTok, `{"address":"`+strings.Repeat("a", MaxBody)+`"}`); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a tenant's oversized body: %d, want 413", rec.Code)
	}
	// acme's 3 per minute: the first call above spent one.
	for i := range 2 {
		if rec := do(acmeTok, body); rec.Code != 200 {
			t.Fatalf("acme's call %d within its rate: %d", i+2, rec.Code)
		}
	}
	rec := do(acmeTok, body)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), `"rate_limited"`) || !strings.Contains(rec.Body.String(), "requests_per_minute is 3") {
		t.Errorf("acme over its rate: %d, Retry-After %q, %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := do(betaTok, body); rec.Code != 200 {
		t.Errorf("beta is held back by acme's rate: %d", rec.Code)
	}
	// beta's token leaves the file.
	s.SetTenants(file(false))
	if rec := do(betaTok, body); rec.Code != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d, want 401", rec.Code)
	}
	out := logs.String()
	if !strings.Contains(out, "tenant=acme") {
		t.Errorf("the log does not name the tenant:\n%s", out)
	}
	for _, secret := range []string{admin, acmeTok, betaTok, strings.TrimPrefix(tenants.Hash(acmeTok), "sha256:"), strings.TrimPrefix(tenants.Hash(betaTok), "sha256:")} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds a token or hash:\n%s", out)
		}
	}
}

// BenchmarkAuth is what a tenants file costs a call before the library
// is reached: the operator's token on a server without tenants, against
// a tenant's token found among 100 (make bench's benchtenants measures
// the same through a real serve, cache hits included).
func BenchmarkAuth(b *testing.B) {
	const admin = "bench-admin-token"
	var src strings.Builder
	var tenantTok string
	for i := range 100 {
		tok := fmt.Sprintf("bench-tenant-token-%03d", i)
		if i == 50 {
			tenantTok = tok
		}
		fmt.Fprintf(&src, "tenant \"t%03d\" {\n  tokens = [%q]\n}\n", i, tenants.Hash(tok))
	}
	set, diags := tenants.Parse([]byte(src.String()), "t.hcl", []string{"agent"})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	const body = `{"address":"sandbox.agent","key":"k"}`
	for _, c := range []struct {
		name, token string
		tenants     *tenants.Set
	}{{"single-token", admin, nil}, {"tenant-of-100", tenantTok, set}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(&fakeLibrary{}, admin, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				b.Fatal(err)
			}
			s.SetTenants(c.tenants)
			for b.Loop() {
				req := httptest.NewRequest("POST", api.PathRequest, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+c.token)
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
