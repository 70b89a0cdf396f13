package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/services/internal/enginetest"
	"github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/state"
)

// The local image's search is RediSearch 1.2, whose FT.CREATE … ON HASH
// PREFIX answers and then indexes nothing: a user of redis:8's API gets
// no error, only empty results. So the generation is read from the
// module the real server loads (INFO modules, go-redis), and a sandbox
// that asks for "search@2" on this image is refused before anything is
// created, naming what the image has; plain "search" and "search@1" pass.
func TestSearchGenerationOnTheLocalImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ref = "sandboxer.local/redis:7"
	image := enginetest.Image(t, ref, "images/build.sh redis")
	hexs := func() string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	c := state.Credentials{User: "app_" + hexs(), Password: state.Secret(hexs()), AdminUser: "sbx_admin", AdminPassword: state.Secret(hexs())}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, redis.ACLFileName), redis.ACLFile(c), 0o644); err != nil {
		t.Fatal(err)
	}
	ctr := enginetest.Start(ctx, t, enginetest.Spec{
		Image: image, Mounts: map[string]string{dir: "/run/sandboxer"}, Port: redis.Port,
		Args: []string{"--aclfile", "/run/sandboxer/" + redis.ACLFileName, "--save", "", "--appendonly", "no",
			"--loadmodule", "/usr/lib/redis/modules/redisearch.so"},
	})
	c.Host, c.Port = "127.0.0.1", ctr.HostPort(ctx, redis.Port)
	ctr.WaitFor(ctx, func(ctx context.Context) error { return redis.Ping(ctx, c.Host, c.Port, c.User, c.Password, nil) })
	admin := redis.Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, nil)
	defer admin.Close()

	// What the image's module says of itself, as an inspection reads it.
	loaded, err := redis.ModuleVersions(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	version, ok := redis.Service{}.FeatureVersion(loaded, "search")
	if !ok {
		t.Fatalf("search is not loaded: %v", loaded)
	}
	gens := services.Generations("redis", map[string]string{"search": version})
	if gens["search"] != "1" {
		t.Fatalf("the local image's search %s is generation %q; want 1", version, gens["search"])
	}

	// Why it matters: the 2.x way of indexing hashes finds nothing here.
	app := redis.Client(c.Host, c.Port, c.User, c.Password, nil)
	defer app.Close()
	created := app.Do(ctx, "FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA", "title", "TEXT").Err()
	t.Logf("RediSearch %s: FT.CREATE idx ON HASH PREFIX 1 doc: … answered %v", version, created)
	if err := app.HSet(ctx, "doc:1", "title", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if created == nil {
		res, err := app.Do(ctx, "FT.SEARCH", "idx", "hello").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 || res[0] != int64(0) {
			t.Fatalf("FT.SEARCH on RediSearch %s found %v: the 1.x module indexes hashes by prefix after all; revisit the generation rule", version, res)
		}
	}

	// The refusal: the same check plan, apply and request run.
	caps := plan.Capabilities{{Service: "redis"}: {Image: ref, Features: map[string]string{"search": version}, Generations: gens}}
	ask := func(feats ...string) error {
		ch := &plan.Change{Addr: config.Address{Name: "s"}, Action: plan.Create,
			After: &plan.Sandbox{Services: []string{"redis"}, Features: config.FeatureSet{"redis": feats}}}
		return plan.Unprovidable([]*plan.Change{ch}, caps)
	}
	for _, ok := range [][]string{{"search"}, {"search@1"}} {
		if err := ask(ok...); err != nil {
			t.Errorf("%v refused on %s: %v", ok, ref, err)
		}
	}
	var ue *plan.UnprovidableError
	if err := ask("search@2"); !errors.As(err, &ue) {
		t.Fatalf("search@2 on %s: %v; want an *UnprovidableError", ref, err)
	}
	s := ue.Shortfalls[0]
	if !strings.Contains(s.Why["search@2"], "API generation 1") || !strings.Contains(strings.Join(s.Provided, ","), "search "+version+" (API generation 1)") {
		t.Errorf("the refusal does not say what the image has: why %q, provided %v", s.Why, s.Provided)
	}
}
