package sandboxer_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// The library on the real engine, configured as the CLI is: provider
// settings (CA directory, cache, ready timeout) come from Options with one
// set of defaults, so a TLS sandbox needs nothing more than the HCL.

const engineFixture = `
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
  tls = true
}

project "shop" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["pg_trgm"] }
}

sandbox "agent" {
  project   = project.shop
  on_demand = true
  ttl       = "10m"
}
`

func openEngine(t *testing.T) *sandboxer.Sandboxer {
	t.Helper()
	testenv.RequireDocker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(engineFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{
		CacheDir: filepath.Join(dir, "cache"), ReadyTimeout: 4 * time.Minute})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		sb.Close()
		// Whatever a failed test left, found by the state's lineage label.
		snap, err := sb.Store().Snapshot(context.Background())
		if err != nil || snap.Lineage == "" {
			return
		}
		filter := "label=dev.sandboxer.lineage=" + snap.Lineage
		for _, kind := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
			out, _ := exec.Command("docker", append(kind, "--filter", filter)...).Output()
			ids := strings.Fields(string(out))
			if len(ids) == 0 {
				continue
			}
			rm := []string{"rm", "-f", "-v"}
			if kind[0] != "ps" {
				rm = []string{kind[0], "rm"}
			}
			_ = exec.Command("docker", append(rm, ids...)...).Run()
		}
	})
	return sb
}

func TestLibraryTLSAndCarriedData(t *testing.T) {
	sb := openEngine(t)
	ctx := context.Background()
	s1, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "tls"})
	if err != nil {
		t.Fatalf("TLS request through the library: %v", err)
	}
	if s1.CA["postgres"] == "" || s1.CA["redis"] == "" {
		t.Fatalf("no CA handed out: %v", s1.CA)
	}
	caFile := s1.Env["SANDBOXER_POSTGRES_CA"]
	if fi, err := os.Stat(caFile); err != nil || !filepath.IsAbs(caFile) {
		t.Fatalf("CA file %q: %v", caFile, err)
	} else if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("CA file mode %v", fi.Mode().Perm())
	}

	// Rows and a key, through TLS clients that verify the sandbox's CA.
	pg := pgConnect(t, s1.Env["SANDBOXER_POSTGRES_URL"], s1.CA["postgres"])
	if _, err := pg.Exec(ctx, `CREATE TABLE items (name text); INSERT INTO items VALUES ('kept')`); err != nil {
		t.Fatal(err)
	}
	pg.Close(ctx)
	rdb := redisConnect(t, s1.Env["SANDBOXER_REDIS_URL"], s1.CA["redis"])
	if err := rdb.Set(ctx, "session:1", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Close()

	// A feature superset replaces the instance; CarryData moves the data.
	s2, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "tls", CarryData: true,
		Extensions: map[string][]string{"postgres": {"citext"}}})
	if err != nil {
		t.Fatalf("carried replace: %v", err)
	}
	if s2.Generation != s1.Generation+1 || s2.Env["SANDBOXER_POSTGRES_PASSWORD"] == s1.Env["SANDBOXER_POSTGRES_PASSWORD"] {
		t.Fatalf("replace: generation %d -> %d, credentials rotated: %v", s1.Generation, s2.Generation,
			s2.Env["SANDBOXER_POSTGRES_PASSWORD"] != s1.Env["SANDBOXER_POSTGRES_PASSWORD"])
	}
	pg = pgConnect(t, s2.Env["SANDBOXER_POSTGRES_URL"], s2.CA["postgres"])
	var name string
	if err := pg.QueryRow(ctx, `SELECT name FROM items`).Scan(&name); err != nil || name != "kept" {
		t.Errorf("carried row: %q, %v", name, err)
	}
	pg.Close(ctx)
	rdb = redisConnect(t, s2.Env["SANDBOXER_REDIS_URL"], s2.CA["redis"])
	if v, err := rdb.Get(ctx, "session:1").Result(); err != nil || v != "kept" {
		t.Errorf("carried key: %q, %v", v, err)
	}
	rdb.Close()

	if released, err := sb.Release(ctx, "sandbox.agent", "tls"); err != nil || !released {
		t.Fatalf("release: %v, %v", released, err)
	}
	if _, err := os.Stat(s2.Env["SANDBOXER_POSTGRES_CA"]); !os.IsNotExist(err) {
		t.Errorf("CA file left after release: %v", err)
	}
	lineage := lineageOf(t, sb)
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=dev.sandboxer.lineage="+lineage).Output()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("containers left after release: %q, %v", out, err)
	}
}

func lineageOf(t *testing.T, sb *sandboxer.Sandboxer) string {
	t.Helper()
	snap, err := sb.Store().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.Lineage
}

func rootsOf(t *testing.T, caPEM string) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		t.Fatal("the handed-out CA does not parse")
	}
	return pool
}

func pgConnect(t *testing.T, url, caPEM string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSConfig = &tls.Config{RootCAs: rootsOf(t, caPEM), ServerName: cfg.Host}
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect to postgres over TLS: %v", err)
	}
	return c
}

func redisConnect(t *testing.T, url, caPEM string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	if opts.TLSConfig == nil {
		t.Fatalf("redis URL %q is not rediss://", strings.SplitN(url, "@", 2)[len(strings.SplitN(url, "@", 2))-1])
	}
	opts.TLSConfig.RootCAs = rootsOf(t, caPEM)
	return redis.NewClient(opts)
}
