package ondemand

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/api"
)

// Two tenants asking for one key get two instances; neither can name,
// list, extend or release the other's, and what they are told about the
// other's is what they would be told about nothing.
func TestTenantsSameKeyTwoInstances(t *testing.T) {
	e := newEnv(t)
	acme := WithTenant(context.Background(), &Tenant{Name: "acme"})
	beta := WithTenant(context.Background(), &Tenant{Name: "beta"})
	a, err := e.b.Request(acme, Request{Address: "sandbox.agent", Key: "dev-7"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.b.Request(beta, Request{Address: "sandbox.agent", Key: "dev-7"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Address == b.Address || a.Reused || b.Reused {
		t.Fatalf("two tenants, one key: %s (reused %v) and %s (reused %v), want two new instances", a.Address, a.Reused, b.Address, b.Reused)
	}
	if a.Env["SANDBOXER_REDIS_PASSWORD"] == b.Env["SANDBOXER_REDIS_PASSWORD"] {
		t.Error("the two tenants' instances share credentials")
	}
	// The address handed back names the same instance again.
	again, err := e.b.Request(acme, Request{Address: a.Address})
	if err != nil || !again.Reused || again.Address != a.Address {
		t.Fatalf("acme asking again by the address it was given: %v, %+v", err, again)
	}
	// beta naming acme's address gets an instance of its own, not acme's.
	other, err := e.b.Request(beta, Request{Address: a.Address})
	if err != nil {
		t.Fatal(err)
	}
	if other.Address == a.Address || other.Env["SANDBOXER_REDIS_PASSWORD"] == a.Env["SANDBOXER_REDIS_PASSWORD"] {
		t.Fatalf("beta naming %s got %s with acme's credentials", a.Address, other.Address)
	}
	if _, err := e.b.Release(beta, other.Address, ""); err != nil {
		t.Fatal(err)
	}
	// Extend of acme's, by beta: not_found, as for a key never requested.
	_, errOther := e.b.Extend(beta, a.Address, "", "2h")
	_, errNone := e.b.Extend(beta, "sandbox.agent", "never-requested", "2h")
	if !errors.Is(errOther, api.ErrNotFound) || !errors.Is(errNone, api.ErrNotFound) {
		t.Fatalf("beta extending acme's: %v; a missing one: %v; want not_found both", errOther, errNone)
	}
	// The message names only what beta asked for, under its own key.
	if want := `sandbox.agent["beta.acme.dev-7"] is not provisioned; request it first`; errOther.Error() != want {
		t.Errorf("beta extending acme's: %q, want %q", errOther, want)
	}
	// Release of acme's by beta: nothing released, acme's still there.
	if released, err := e.b.Release(beta, a.Address, ""); err != nil || released {
		t.Fatalf("beta releasing acme's: released %v, %v", released, err)
	}
	for ctx, want := range map[context.Context]string{acme: a.Address, beta: b.Address} {
		recs, _, err := e.b.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Address != want {
			var got []string
			for _, r := range recs {
				got = append(got, r.Address)
			}
			t.Errorf("%s lists %v, want only %s", TenantOf(ctx).Name, got, want)
		}
	}
	all, _, err := e.b.List(context.Background())
	if err != nil || len(all) != 2 {
		t.Fatalf("the operator lists %d instances (%v), want both", len(all), err)
	}
	owners := map[string]string{}
	for _, r := range all {
		owners[r.Address] = r.Owner
	}
	if owners[a.Address] != "acme" || owners[b.Address] != "beta" {
		t.Errorf("owners in state: %v", owners)
	}
	if own, err := e.b.Own(beta, a.Address); err == nil || !errors.Is(err, api.ErrNotFound) {
		t.Errorf("beta may act on acme's data (%q, %v)", own, err)
	}
	// Events name the owner.
	e.ev.mu.Lock()
	var owned int
	for _, ev := range e.ev.ev {
		if ev.Owner != "" {
			owned++
		}
	}
	e.ev.mu.Unlock()
	if owned == 0 {
		t.Error("no event names its owner")
	}
}

func TestTenantBlocksAndTTL(t *testing.T) {
	e := newEnv(t)
	ctx := WithTenant(context.Background(), &Tenant{Name: "acme", Blocks: []string{"agent"}, Quota: Quota{MaxTTL: 2 * time.Hour}})
	if _, err := e.b.Request(ctx, Request{Address: "sandbox.kv", Key: "x"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("a block the tenant may not use: %v, want not_found", err)
	}
	var ke *Error
	_, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "x", TTL: "3h"})
	if !errors.As(err, &ke) || ke.Kind != QuotaExceeded || !strings.Contains(err.Error(), "max_ttl is 2h0m0s") {
		t.Errorf("ttl over max_ttl: %v, want quota_exceeded naming the limit", err)
	}
	if len(e.prov.log()) != 0 {
		t.Errorf("refusals provisioned: %v", e.prov.log())
	}
	if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "x"}); err != nil {
		t.Fatal(err) // the block's 1h is within 2h
	}
	if _, err := e.b.Extend(ctx, "sandbox.agent", "x", "5h"); !errors.As(err, &ke) || ke.Kind != QuotaExceeded {
		t.Errorf("extend over max_ttl: %v, want quota_exceeded", err)
	}
}

// 20 concurrent requests of a tenant with a quota of 5 live instances
// make exactly 5, each of the others refused with quota_exceeded.
func TestTenantInstanceQuotaUnderConcurrency(t *testing.T) {
	e := newEnv(t)
	e.prov.delay = 20 * time.Millisecond
	ctx := WithTenant(context.Background(), &Tenant{Name: "acme", Quota: Quota{Instances: 5}})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, quota int
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "k" + string(rune('a'+i))})
			mu.Lock()
			defer mu.Unlock()
			var ke *Error
			switch {
			case err == nil:
				ok++
			case errors.As(err, &ke) && ke.Kind == QuotaExceeded:
				quota++
				if !strings.Contains(err.Error(), "quota instances is 5; 5 live") {
					t.Errorf("refusal does not name the limit and use: %v", err)
				}
			default:
				t.Errorf("request %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if ok != 5 || quota != 15 || e.prov.creates != 5 {
		t.Fatalf("%d made, %d refused, %d provisions; want 5, 15, 5", ok, quota, e.prov.creates)
	}
	// Another tenant is not held back by acme's use.
	if _, err := e.b.Request(WithTenant(context.Background(), &Tenant{Name: "beta", Quota: Quota{Instances: 1}}), Request{Address: "sandbox.agent", Key: "ka"}); err != nil {
		t.Fatal(err)
	}
	// A reuse of an own instance is not a new one.
	recs, _, err := e.b.List(ctx)
	if err != nil || len(recs) != 5 {
		t.Fatalf("acme lists %d instances (%v), want 5", len(recs), err)
	}
	if _, err := e.b.Request(ctx, Request{Address: recs[0].Address}); err != nil {
		t.Fatalf("a reuse at the quota: %v", err)
	}
}

func TestTenantKeyRule(t *testing.T) {
	acme := &Tenant{Name: "acme"}
	for _, c := range []struct {
		t       *Tenant
		in, out string
	}{
		{nil, "dev-7", "dev-7"},
		{acme, "dev-7", "acme.dev-7"},
		{acme, "acme.dev-7", "acme.dev-7"},
		{acme, "beta.dev-7", "acme.beta.dev-7"},
		{acme, "acme-x.dev", "acme.acme-x.dev"},
	} {
		if got := TenantKey(c.t, c.in); got != c.out {
			t.Errorf("TenantKey(%v, %q) = %q, want %q", c.t, c.in, got, c.out)
		}
	}
}
