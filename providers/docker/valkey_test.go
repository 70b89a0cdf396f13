package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/state"
)

func testValkeyImage() string {
	return envOr("SANDBOXER_TEST_VALKEY_IMAGE", "sandboxer.local/valkey:8")
}

// requireValkeyImage fails (never skips) when the engine is there but
// the valkey image is not (images/build.sh valkey).
func requireValkeyImage(t *testing.T, p *Provider) {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(context.Background(), testValkeyImage()); err != nil {
		t.Fatalf("test image %q is not available (%v): run images/build.sh valkey", testValkeyImage(), err)
	}
	p.cfg.Images["valkey"] = config.Image{Ref: testValkeyImage()}
}

// Valkey on the Docker runtime through nothing of its own: the image's
// inspection (the Redis-style module inspection, with valkey-server),
// Create, the handed-out user with go-redis, refused escapes, the default
// user off, rotation, Probe, Delete.
func TestCreateValkey(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	requireValkeyImage(t, p)
	lineage := newLineage(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("inspection", func(t *testing.T) {
		img := p.cfg.Images["valkey"]
		img.Modules = map[string]string{"json": "/usr/lib/valkey/nosuch-json.so"}
		q, err := New(ctx, &config.Provider{Images: map[string]config.Image{"valkey": img}, MemoryMB: 256, PidsLimit: 256}, config.DefaultCatalog())
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		caps, err := q.Check(ctx, uses("valkey"))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		vk := caps[use("valkey")]
		if vk.Features == nil || len(vk.Features) != 0 {
			t.Errorf("the local valkey image provides %v; Debian packages no module", vk.Features)
		}
		if why := vk.Unusable["json"]; !strings.Contains(why, "nosuch-json.so") {
			t.Errorf("json: want the failed MODULE LOAD naming the path, got %q (all: %v)", why, vk.Unusable)
		}
		if !strings.Contains(vk.Hint, `image "valkey"`) || !strings.Contains(vk.Hint, "valkey/valkey-bundle:8") {
			t.Errorf("hint %q does not speak of valkey", vk.Hint)
		}
		assertNoInspections(t, q)
	})

	req := apply.CreateRequest{Address: "sandbox.vk", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"valkey": {}}}
	created, err := p.Create(ctx, req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rec := recordFor(req, created)
	c := created.Credentials["valkey"]
	if c.User == "" || c.User == "default" || c.User == c.AdminUser || c.Password == c.AdminPassword || c.Database != "" {
		t.Fatalf("credentials: user %q admin %q database %q", c.User, c.AdminUser, c.Database)
	}
	if u := c.URL("valkey"); !strings.HasPrefix(u, "redis://"+c.User+":") {
		t.Errorf("URL scheme/user: %s", strings.ReplaceAll(u, c.Password.Reveal(), "***"))
	}

	app := redissvc.Client(c.Host, c.Port, c.User, c.Password, nil)
	defer app.Close()
	t.Run("app user", func(t *testing.T) {
		if err := app.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if who, err := app.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != c.User {
			t.Errorf("ACL WHOAMI = %q, %v", who, err)
		}
		for _, cmd := range [][]any{
			{"CONFIG", "SET", "maxmemory", "1"},
			{"MODULE", "LOAD", "/usr/lib/x86_64-linux-gnu/libc.so.6"},
			{"DEBUG", "SLEEP", "0"},
			{"ACL", "SETUSER", "default", "on", "nopass", "+@all"},
		} {
			err := app.Do(ctx, cmd...).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "not allowed") {
				t.Errorf("%v as the app user: %v, want refused", cmd, err)
			}
		}
		// Behind the ACL, the server's own switches: not even the admin
		// loads a module or runs DEBUG.
		admin := redissvc.Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, nil)
		defer admin.Close()
		for _, cmd := range [][]any{{"MODULE", "LOAD", "/usr/lib/x86_64-linux-gnu/libc.so.6"}, {"DEBUG", "SLEEP", "0"}} {
			if err := admin.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "not allowed") {
				t.Errorf("%v as the admin: %v, want the server to refuse it", cmd, err)
			}
		}
		for _, pw := range []state.Secret{"", c.Password, c.AdminPassword} {
			if err := redissvc.Ping(ctx, c.Host, c.Port, "default", pw, nil); err == nil {
				t.Error("the default user logs in")
			}
		}
		if err := redissvc.Ping(ctx, c.Host, c.Port, c.AdminUser, c.Password, nil); err == nil {
			t.Error("the admin logs in with the app's password")
		}
	})

	t.Run("probe", func(t *testing.T) {
		if err := p.Probe(ctx, rec); err != nil {
			t.Fatalf("Probe: %v", err)
		}
	})

	t.Run("rotate", func(t *testing.T) {
		s, ok := services.Lookup("valkey")
		if !ok {
			t.Fatal("valkey is not in the catalogue")
		}
		pw := state.Secret("rotated-" + lineage[:12])
		secrets.record(pw.Reveal())
		if err := s.Rotate(ctx, c, pw); err != nil {
			secrets.assertClean(t, err)
			t.Fatalf("Rotate: %v", err)
		}
		if err := redissvc.Ping(ctx, c.Host, c.Port, c.User, c.Password, nil); err == nil {
			t.Error("the old password still logs in")
		}
		if err := redissvc.Ping(ctx, c.Host, c.Port, c.User, pw, nil); err != nil {
			t.Errorf("the new password: %v", err)
		}
	})

	if err := p.Delete(ctx, rec); err != nil {
		secrets.assertClean(t, err)
		t.Fatalf("Delete: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
}
