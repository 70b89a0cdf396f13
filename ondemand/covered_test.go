package ondemand

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Covered answers the record only while the cache rule covers the
// request as it stands, and touches neither the provider nor a lock.
func TestCoveredIsTheCacheRuleWithoutAProbe(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := Request{Address: "sandbox.agent", Key: "dev-7"}
	if rec, err := e.b.Covered(ctx, req); err != nil || rec != nil {
		t.Fatalf("before any request: %v, %v; want nothing", rec, err)
	}
	r1, err := e.b.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.prov.reset()
	rec, err := e.b.Covered(ctx, req)
	if err != nil || rec == nil || rec.Generation != r1.Generation {
		t.Fatalf("a covering instance: %+v, %v; want generation %d", rec, err, r1.Generation)
	}
	// More than the instance has: a replace is the broker's to make.
	if rec, err := e.b.Covered(ctx, Request{Address: "sandbox.agent", Key: "dev-7", Extensions: map[string][]string{"postgres": {"vector"}}}); err != nil || rec != nil {
		t.Errorf("a superset: %v, %v; want nothing", rec, err)
	}
	// Expired: the broker's too.
	e.advance(2 * time.Hour)
	if rec, err := e.b.Covered(ctx, req); err != nil || rec != nil {
		t.Errorf("past its ttl: %v, %v; want nothing", rec, err)
	}
	if got := e.prov.log(); len(got) != 0 {
		t.Errorf("Covered called the provider: %s", cmp.Diff([]string(nil), got))
	}
	// Bad input is the broker's error, as Request's.
	if _, err := e.b.Covered(ctx, Request{Address: "sandbox.nope", Key: "k"}); err == nil {
		t.Error("an unknown block: no error")
	}
}
