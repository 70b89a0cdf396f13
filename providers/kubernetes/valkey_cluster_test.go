package kubernetes

import (
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
)

// Valkey on the real cluster: the pod comes up from services/valkey's
// start, the handed-out user logs in over the protocol at the pod IP, and
// the escapes a sandbox user must not have are refused.
func TestValkeyOnCluster(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	p.cfg.Images["valkey"] = config.Image{Ref: envOr("SANDBOXER_TEST_VALKEY_IMAGE", "sandboxer.local/valkey:8")}
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.valkey", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"valkey": {}}})
	ctx := ctxFor(t, time.Minute)
	c := rec.Credentials["valkey"]
	rdb := redissvc.Client(c.Host, c.Port, c.User, c.Password, nil)
	defer rdb.Close()
	mustf(t, rdb.Set(ctx, "k", "v", 0).Err(), "SET as the handed-out user")
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("GET: %q, %v", v, err)
	}
	for _, cmd := range [][]any{{"CONFIG", "SET", "save", ""}, {"MODULE", "LOAD", "/tmp/x.so"}, {"DEBUG", "SLEEP", "0"}} {
		if err := rdb.Do(ctx, cmd...).Err(); err == nil {
			t.Errorf("the app user may %v", cmd[:2])
		}
	}
	def := redissvc.Client(c.Host, c.Port, "default", c.Password, nil)
	defer def.Close()
	if err := def.Ping(ctx).Err(); err == nil {
		t.Error("the default user logs in")
	}
}
