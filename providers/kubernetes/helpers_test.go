package kubernetes

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

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
)

// Images under test: the local images, which the local cluster imports.
func testPostgresImage() string {
	return envOr("SANDBOXER_TEST_POSTGRES_IMAGE", "sandboxer.local/postgres:17")
}

func testRedisImage() string { return envOr("SANDBOXER_TEST_REDIS_IMAGE", "sandboxer.local/redis:7") }

func testRedisSearchModule() string {
	return envOr("SANDBOXER_TEST_REDIS_SEARCH_MODULE", "/usr/lib/redis/modules/redisearch.so")
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func testConfig(kubeconfig string) *config.Provider {
	modules := map[string]string{}
	if m := testRedisSearchModule(); m != "" {
		modules["search"] = m
	}
	return &config.Provider{
		Runtime:    config.RuntimeKubernetes,
		Kubeconfig: kubeconfig,
		Namespace:  testenv.KubeNamespace(),
		Images: map[string]config.Image{
			"postgres": {Ref: testPostgresImage()},
			"redis":    {Ref: testRedisImage(), Modules: modules},
		},
		MemoryMB: 512,
	}
}

// capsDir is shared by the tests of one run, so only the first pays for
// the image inspections (as a second `sandboxer plan` would).
var capsDir = sync.OnceValue(func() string {
	d, err := os.MkdirTemp("", "sandboxer-kube-caps-")
	if err != nil {
		panic(err)
	}
	return d
})

// secretLog collects every secret the provider generates so a test can
// assert none of them shows anywhere.
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

func (s *secretLog) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.secrets...)
}

// assertNoSecret fails if text holds a generated secret.
func (s *secretLog) assertNoSecret(tb testing.TB, what, text string) {
	tb.Helper()
	secs := s.all()
	if len(secs) == 0 {
		tb.Errorf("no secrets were recorded; the leak check is vacuous")
	}
	for _, sec := range secs {
		if strings.Contains(text, sec) {
			tb.Errorf("%s holds a generated secret", what)
			return
		}
	}
}

// newTestProvider connects to the test cluster.
func newTestProvider(tb testing.TB) (*Provider, *secretLog) {
	tb.Helper()
	kc := testenv.Kubeconfig(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(kc), config.DefaultCatalog())
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	p.SetCacheDir(capsDir())
	p.CADir = tb.TempDir()
	secrets := &secretLog{}
	p.onSecrets = secrets.record
	return p, secrets
}

// newLineage returns a random lineage for one test and deletes everything
// labelled with it when the test ends.
func newLineage(tb testing.TB, p *Provider) string {
	tb.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	lineage := hex.EncodeToString(b)
	cleanupLineage(tb, p, lineage)
	return lineage
}

// cleanupLineage deletes everything labelled with lineage when the test
// ends (its sandboxes, then the lineage's shared objects).
func cleanupLineage(tb testing.TB, p *Provider, lineage string) {
	tb.Helper()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		left, err := p.ListManaged(ctx, lineage)
		if err != nil {
			tb.Errorf("cleanup: %v", err)
			return
		}
		if err := p.DeleteManaged(ctx, left); err != nil {
			tb.Errorf("cleanup: %v", err)
		}
	})
}

// assertNothingLabelled fails if any object carries the lineage.
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

// createInstance creates one instance of lineage and deletes it when the
// test ends.
func createInstance(tb testing.TB, p *Provider, req apply.CreateRequest) *state.Record {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := p.Create(ctx, req)
	if err != nil {
		tb.Fatalf("Create %s: %v", req.Address, err)
	}
	rec := &state.Record{
		Address: req.Address, Services: req.Features.Services(), Features: req.Features,
		AvailableExtensions: c.AvailableExtensions, Credentials: c.Credentials,
		Resources: c.Resources, CreatedAt: time.Now(), Generation: req.Generation,
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Delete(ctx, rec); err != nil {
			tb.Errorf("cleanup: Delete %s: %v", req.Address, err)
		}
	})
	return rec
}

func bare() config.FeatureSet { return config.FeatureSet{"postgres": {}, "redis": {}} }

func ctxFor(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

func mustf(tb testing.TB, err error, format string, args ...any) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}
