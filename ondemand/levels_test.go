package ondemand

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Levels: a claimed pool member counts as its caller's instance, the
// unclaimed ones as the pool's ready members; an expired instance and a
// declared block are not counted.
func TestLevels(t *testing.T) {
	e, _ := newPoolEnv(t)
	ctx := context.Background()
	if _, err := e.b.FillPool(ctx, "sandbox.warm"); err != nil {
		t.Fatal(err)
	}
	if res, err := e.b.Request(ctx, Request{Address: "sandbox.warm", Key: "w1"}); err != nil || !res.FromPool {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	for _, key := range []string{"a", "b"} {
		ttl := "1h"
		if key == "b" {
			ttl = "2m"
		}
		if _, err := e.b.Request(ctx, Request{Address: "sandbox.agent", Key: key, TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	e.advance(5 * time.Minute) // b has expired
	got, err := e.b.Levels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Level{
		{Block: "sandbox.agent", Instances: 1},
		{Block: "sandbox.kv"},
		{Block: "sandbox.warm", Instances: 1, PoolReady: 2, PoolSize: 3},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("levels (-want +got):\n%s", d)
	}
}
