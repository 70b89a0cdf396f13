package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// Check inspects the real images: the postgres image's extension control
// files with versions, the redis modules that actually load (with the
// versions the server reports), and a configured module that does not
// load is reported as unusable, not provided. Nothing is left running.
func TestCheckCapabilities(t *testing.T) {
	t.Parallel()
	requireImages(t)
	cfg := testConfig()
	img := cfg.Images["redis"]
	img.Modules = map[string]string{"json": "/usr/lib/redis/modules/rejson.so"}
	if m := testRedisSearchModule(); m != "" {
		img.Modules["search"] = m
	}
	cfg.Images["redis"] = img
	ctx := context.Background()
	p, err := New(ctx, cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir := t.TempDir()
	p.SetCacheDir(dir)

	start := time.Now()
	caps, err := p.Check(ctx, uses("postgres", "redis"))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	t.Logf("first Check (inspects both images): %s", time.Since(start))

	pg := caps[use("postgres")]
	for _, ext := range []string{"vector", "postgis", "pg_trgm", "timescaledb"} {
		if v, ok := pg.Features[ext]; !ok || v == "" {
			t.Errorf("postgres image: %s missing or without version (%q, %v); got %v", ext, v, ok, pg.Features)
		}
	}
	for ext := range pg.Features {
		if config.DefaultCatalog().CheckFeature("postgres", ext) != nil {
			t.Errorf("postgres capabilities list %q, which is not on the allowlist", ext)
		}
	}
	rd := caps[use("redis")]
	if testRedisSearchModule() != "" {
		// The local image: Debian's RediSearch 1.2.
		if got := rd.Features["search"]; !strings.HasPrefix(got, "1.2.") {
			t.Errorf("redis search version = %q, want 1.2.x; features %v", got, rd.Features)
		}
	} else if _, ok := rd.Features["search"]; !ok {
		t.Errorf("redis search missing: %v", rd.Features)
	}
	if testRedisSearchModule() != "" {
		if _, ok := rd.Features["json"]; ok {
			t.Errorf("json listed although its module file does not exist: %v", rd.Features)
		}
		if why := rd.Unusable["json"]; !strings.Contains(why, "rejson.so") {
			t.Errorf("json: want a reason naming the module that failed to load, got %q", why)
		}
		if _, ok := rd.Features["bloom"]; ok {
			t.Errorf("bloom listed without any module: %v", rd.Features)
		}
	}
	if rd.Image != testRedisImage() || pg.Image != testPostgresImage() {
		t.Errorf("images: %q, %q", pg.Image, rd.Image)
	}
	assertNoInspections(t, p)

	// A second provider (a later run) finds both in the cache directory.
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 2 {
		t.Errorf("cache files: %v", files)
	}
	q, err := New(ctx, cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	q.SetCacheDir(dir)
	start = time.Now()
	again, err := q.Check(ctx, uses("postgres", "redis"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cached Check: %s", time.Since(start))
	if len(again[use("postgres")].Features) != len(pg.Features) || again[use("redis")].Features["search"] != rd.Features["search"] {
		t.Errorf("cached capabilities differ: %v vs %v", again, caps)
	}
	// A damaged cache file is ignored, not trusted.
	for _, f := range files {
		if err := os.WriteFile(f, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(ctx, cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetCacheDir(dir)
	if third, err := r.Check(ctx, uses("redis")); err != nil || third[use("redis")].Features["search"] != rd.Features["search"] {
		t.Errorf("after a damaged cache: %v, %v", third, err)
	}
}

// assertNoInspections fails if an inspection container is left.
func assertNoInspections(t *testing.T, p *Provider) {
	t.Helper()
	cs, err := p.cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelInspect+"=true"))})
	if err != nil {
		t.Fatal(err)
	}
	// Other tests may inspect at the same time; only old ones are leaks.
	for _, c := range cs {
		if time.Since(time.Unix(c.Created, 0)) > 2*time.Minute {
			t.Errorf("inspection container left behind: %s", c.ID)
		}
	}
}

// A sandbox that asks for timescaledb gets it preloaded, and the handed-out
// role (not a superuser) turns its own table into a hypertable.
func TestCreateTimescaleDB(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := context.Background()
	if _, err := p.Check(ctx, uses("postgres")); err != nil {
		t.Fatal(err)
	}
	req := apply.CreateRequest{Address: "sandbox.tsdb", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {"timescaledb"}}}
	made, err := p.Create(ctx, req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer func() {
		if err := p.Delete(context.Background(), recordFor(req, made)); err != nil {
			t.Errorf("Delete: %v", err)
		}
	}()
	if v := made.ExtensionVersions["postgres"]["timescaledb"]; v == "" {
		t.Errorf("no timescaledb version recorded: %v", made.ExtensionVersions)
	}
	c := made.Credentials["postgres"]
	conn, err := pgsvc.Connect(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || super {
		t.Fatalf("handed-out role is superuser=%v (%v)", super, err)
	}
	for _, sql := range []string{
		"CREATE TABLE metrics (at timestamptz NOT NULL, value double precision)",
		"SELECT create_hypertable('metrics', 'at')",
		"INSERT INTO metrics SELECT t, 1 FROM generate_series(now() - interval '30 days', now(), interval '1 hour') t",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var chunks int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM show_chunks('metrics')").Scan(&chunks); err != nil || chunks < 2 {
		t.Errorf("chunks of the hypertable: %d (%v)", chunks, err)
	}
	var bucketed int
	err = conn.QueryRow(ctx, "SELECT count(DISTINCT time_bucket('1 day', at)) FROM metrics").Scan(&bucketed)
	if err != nil || bucketed < 30 {
		t.Errorf("time_bucket: %d (%v)", bucketed, err)
	}
}
