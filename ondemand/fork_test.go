package ondemand

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/state"
)

// forkingFake forks by creating each copy (the data is the engine's
// business, tested on the real one in providers/docker).
type forkingFake struct {
	*fakeProvider
	srcs []string
}

func (f *forkingFake) Fork(ctx context.Context, src *state.Record, reqs []apply.CreateRequest) (*apply.Forked, error) {
	f.srcs = append(f.srcs, src.Address)
	out := &apply.Forked{Methods: map[string]string{"redis": "rdb"}, Held: 3 * time.Millisecond}
	for _, r := range reqs {
		c, err := f.Create(ctx, r)
		if err != nil {
			return nil, err
		}
		out.Created = append(out.Created, c)
	}
	return out, nil
}

func TestForkMakesOrdinaryCopies(t *testing.T) {
	e := newEnv(t)
	fk := &forkingFake{fakeProvider: e.prov}
	e.b.Provider = fk
	ctx := context.Background()
	src, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: "base"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.b.Fork(ctx, ForkRequest{Address: "sandbox.agent", Key: "base", Count: 2, TTL: "30m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sandboxes) != 2 || res.Sandboxes[0].Address != `sandbox.agent["base-fork-1"]` || res.Sandboxes[1].Address != `sandbox.agent["base-fork-2"]` {
		t.Fatalf("copies %+v, want base-fork-1 and base-fork-2", res.Sandboxes)
	}
	if res.Source != src.Address || res.Methods["redis"] != "rdb" || res.HeldMS != 3 {
		t.Errorf("result %+v", res.ForkResult)
	}
	for _, s := range res.Sandboxes {
		if s.Env["SANDBOXER_REDIS_PASSWORD"] == src.Env["SANDBOXER_REDIS_PASSWORD"] {
			t.Errorf("%s has the source's password", s.Address)
		}
		rec, err := e.store.Get(ctx, s.Address)
		if err != nil || rec == nil {
			t.Fatalf("%s not recorded: %v", s.Address, err)
		}
		if !rec.OnDemand || rec.Generation != 1 || !rec.ExpiresAt.Equal(e.clock().Add(30*time.Minute)) {
			t.Errorf("%s: on_demand %v, generation %d, expires %s", s.Address, rec.OnDemand, rec.Generation, rec.ExpiresAt)
		}
		// An ordinary instance afterwards: a request reuses it.
		again, err := e.b.Request(ctx, Request{Address: s.Address})
		if err != nil || !again.Reused {
			t.Errorf("request of %s: %v, reused %v", s.Address, err, again != nil && again.Reused)
		}
	}
	if got := strings.Join(e.ev.types(), ","); strings.Count(got, `provisioned sandbox.agent["base-fork-`) != 2 || strings.Count(got, `g1 fork of sandbox.agent["base"]`) != 2 {
		t.Errorf("events %s", got)
	}
	// Forking again to the same keys is refused, nothing made.
	n := e.prov.creates
	_, err = e.b.Fork(ctx, ForkRequest{Address: `sandbox.agent["base"]`, Count: 1})
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), `sandbox.agent["base-fork-1"] exists already`) {
		t.Errorf("fork onto taken keys: %v, want conflict", err)
	}
	if e.prov.creates != n {
		t.Error("a refused fork created something")
	}
}

func TestForkRefusals(t *testing.T) {
	e := newEnv(t)
	fk := &forkingFake{fakeProvider: e.prov}
	e.b.Provider = fk
	acme := WithTenant(context.Background(), &Tenant{Name: "acme"})
	beta := WithTenant(context.Background(), &Tenant{Name: "beta"})
	a, err := e.b.Request(acme, Request{Address: "sandbox.agent", Key: "base"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		req  ForkRequest
		want error
		msg  string
	}{
		{"count 0", acme, ForkRequest{Address: "sandbox.agent", Key: "base", Count: 0}, api.ErrInvalid, "a fork makes 1 to 16 copies"},
		{"count 17", acme, ForkRequest{Address: "sandbox.agent", Key: "base", Count: 17}, api.ErrInvalid, "a fork makes 1 to 16 copies"},
		{"unknown", acme, ForkRequest{Address: "sandbox.agent", Key: "never", Count: 1}, api.ErrNotFound, "is not provisioned"},
		{"another tenant's", beta, ForkRequest{Address: a.Address, Count: 1}, api.ErrNotFound, "is not provisioned"},
		{"not on demand", acme, ForkRequest{Address: "sandbox.dev", Key: "x", Count: 1}, api.ErrInvalid, "not an on-demand block"},
		{"bad prefix", acme, ForkRequest{Address: "sandbox.agent", Key: "base", Count: 1, ToKey: "a b"}, api.ErrInvalid, "invalid key"},
	} {
		_, err := e.b.Fork(tc.ctx, tc.req)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v with %q", tc.name, err, tc.want, tc.msg)
		}
	}
	if len(fk.srcs) != 0 {
		t.Errorf("refused forks reached the provider: %v", fk.srcs)
	}
	// A dead source is refused.
	rec, _ := e.store.Get(context.Background(), a.Address)
	e.prov.mu.Lock()
	e.prov.dead[rec.Resources.Network] = true
	e.prov.mu.Unlock()
	if _, err := e.b.Fork(acme, ForkRequest{Address: a.Address, Count: 1}); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "is not running") {
		t.Errorf("fork of a dead instance: %v, want conflict", err)
	}
	// A runtime that cannot fork says so.
	e.b.Provider = e.prov
	delete(e.prov.dead, rec.Resources.Network)
	if _, err := e.b.Fork(acme, ForkRequest{Address: a.Address, Count: 1}); !errors.Is(err, api.ErrUnavailable) || !strings.Contains(err.Error(), "cannot fork") {
		t.Errorf("fork on a runtime without it: %v, want unavailable", err)
	}
}
