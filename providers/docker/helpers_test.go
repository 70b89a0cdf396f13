package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Images under test; CI builds the defaults with `make images`.
func testPostgresImage() string {
	return envOr("SANDBOXER_TEST_POSTGRES_IMAGE", "sandboxer.local/postgres:17")
}

func testRedisImage() string {
	return envOr("SANDBOXER_TEST_REDIS_IMAGE", "sandboxer.local/redis:7")
}

// testRedisSearchModule is where the search module lives in the redis test
// image; set SANDBOXER_TEST_REDIS_SEARCH_MODULE="" for an image that loads
// it itself (redis:8).
func testRedisSearchModule() string {
	return envOr("SANDBOXER_TEST_REDIS_SEARCH_MODULE", "/usr/lib/redis/modules/redisearch.so")
}

// uses names the services' images as Check gets them from a plan that
// chose none: the provider's own choice.
func uses(services ...string) []plan.ImageUse {
	out := make([]plan.ImageUse, len(services))
	for i, s := range services {
		out[i] = use(s)
	}
	return out
}

func use(service string) plan.ImageUse { return plan.ImageUse{Service: service} }

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func testConfig() *config.Provider {
	modules := map[string]string{}
	if m := testRedisSearchModule(); m != "" {
		modules["search"] = m
	}
	return &config.Provider{
		Images: map[string]config.Image{
			"postgres": {Ref: testPostgresImage()},
			"redis":    {Ref: testRedisImage(), Modules: modules},
		},
		MemoryMB:  512,
		PidsLimit: 512,
	}
}

// requireImages skips without an engine (fails with
// SANDBOXER_REQUIRE_DOCKER=1, as in CI), and fails (never skips) when the
// engine is there but the test images are missing.
func requireImages(tb testing.TB) {
	tb.Helper()
	testenv.RequireDocker(tb)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		tb.Fatalf("docker client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ref := range []string{testPostgresImage(), testRedisImage()} {
		if _, err := cli.ImageInspect(ctx, ref); err != nil {
			tb.Fatalf("test image %q is not available (%v): run `make images` to build the local images "+
				"(or point SANDBOXER_TEST_POSTGRES_IMAGE / SANDBOXER_TEST_REDIS_IMAGE at existing ones)", ref, err)
		}
	}
}

// secretLog collects every secret the provider generates so a test can
// assert that none of them reaches an error string.
type secretLog struct {
	mu      sync.Mutex
	secrets []string
}

func (s *secretLog) record(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range secrets {
		if v != "" {
			s.secrets = append(s.secrets, v)
		}
	}
}

// assertClean fails if err's text, in any fmt form, holds a secret.
func (s *secretLog) assertClean(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.secrets) == 0 {
		tb.Errorf("no secrets were recorded; the leak check is vacuous")
	}
	for _, form := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		for _, sec := range s.secrets {
			if strings.Contains(form, sec) {
				tb.Errorf("error text contains a generated secret: %s", form)
				return
			}
		}
	}
}

// newTestProvider returns a provider for the local engine with its secrets
// recorded, closed at the end of the test.
func newTestProvider(tb testing.TB) (*Provider, *secretLog) {
	tb.Helper()
	requireImages(tb)
	p, err := New(context.Background(), testConfig(), config.DefaultCatalog())
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	secrets := &secretLog{}
	p.onSecrets = secrets.record
	tb.Cleanup(func() { p.Close() })
	return p, secrets
}

// newLineage returns a random lineage for one test and removes everything
// labelled with it when the test ends, whatever happened.
func newLineage(tb testing.TB, p *Provider) string {
	tb.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	lineage := hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Two passes: a lineage network that the first pass saw in use
		// (by a container it then removed) is listed by the second. Runs
		// here have left such networks behind; the engine must end as it
		// began.
		for pass := 1; pass <= 2; pass++ {
			left, err := p.ListManaged(ctx, lineage)
			if err != nil {
				tb.Errorf("cleanup: %v", err)
				return
			}
			if len(left) == 0 {
				return
			}
			if pass == 2 {
				tb.Logf("cleanup: second pass removes %d resource(s) of lineage %s", len(left), lineage)
			}
			if err := p.DeleteManaged(ctx, left); err != nil {
				tb.Errorf("cleanup: %v", err)
			}
		}
	})
	return lineage
}

// assertNothingLabelled fails if any resource carries the lineage.
func assertNothingLabelled(tb testing.TB, p *Provider, lineage string) {
	tb.Helper()
	left, err := p.ListManaged(context.Background(), lineage)
	if err != nil {
		tb.Fatalf("ListManaged: %v", err)
	}
	for _, m := range left {
		tb.Errorf("left behind: %s %s (%s)", m.Kind, m.Name, m.Address)
	}
}

// recordFor is what apply would store for a created instance.
func recordFor(req apply.CreateRequest, c *apply.Created) *state.Record {
	return &state.Record{
		Address:             req.Address,
		Services:            req.Features.Services(),
		Features:            req.Features,
		AvailableExtensions: c.AvailableExtensions,
		Credentials:         c.Credentials,
		Resources:           c.Resources,
		CreatedAt:           time.Now(),
		Generation:          req.Generation,
	}
}
