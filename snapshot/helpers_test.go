package snapshot_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/providers/docker"
	"github.com/sandboxer/sandboxer/state"
)

// These tests run the engines for real: the docker provider provisions
// instances from the local images, and data is checked with pgx and
// go-redis as the handed-out users.

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

type engine struct {
	prov    *docker.Provider
	lineage string
}

func newEngine(t testing.TB) *engine {
	t.Helper()
	testenv.RequireDocker(t)
	ctx := context.Background()
	modules := map[string]string{}
	if m := envOr("SANDBOXER_TEST_REDIS_SEARCH_MODULE", "/usr/lib/redis/modules/redisearch.so"); m != "" {
		modules["search"] = m
	}
	cfg := &config.Provider{
		Images: map[string]config.Image{
			"postgres": {Ref: envOr("SANDBOXER_TEST_POSTGRES_IMAGE", "sandboxer.local/postgres:17")},
			"redis":    {Ref: envOr("SANDBOXER_TEST_REDIS_IMAGE", "sandboxer.local/redis:7"), Modules: modules},
		},
		MemoryMB: 512, PidsLimit: 512,
	}
	prov, err := docker.New(ctx, cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatalf("docker provider (these tests need the engine and the local images): %v", err)
	}
	t.Cleanup(func() { prov.Close() })
	// The engine is shared with other test runs; a loaded machine can
	// take far longer than a minute to initdb.
	prov.ReadyTimeout = 4 * time.Minute
	// A random lineage of its own, no fixed prefix: names carry 12 of its
	// characters, and runs sharing the engine must never collide.
	var b [16]byte
	_, _ = rand.Read(b[:])
	e := &engine{prov: prov, lineage: hex.EncodeToString(b[:])}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		left, err := prov.ListManaged(cctx, e.lineage)
		if err == nil {
			err = prov.DeleteManaged(cctx, left)
		}
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return e
}

// create provisions one instance and returns its record.
func (e *engine) create(t testing.TB, addr string, gen int, fs config.FeatureSet) *state.Record {
	t.Helper()
	fs = fs.Normalize()
	made, err := e.prov.Create(context.Background(), apply.CreateRequest{Address: addr, Lineage: e.lineage, Generation: gen, Features: fs})
	if err != nil {
		t.Fatalf("create %s: %v", addr, err)
	}
	return &state.Record{Address: addr, Project: "p", Services: fs.Services(), Features: map[string][]string(fs),
		AvailableExtensions: made.AvailableExtensions, Credentials: made.Credentials, Resources: made.Resources,
		CreatedAt: time.Now().UTC(), Generation: gen}
}

// pg connects as the handed-out role.
func pg(t testing.TB, rec *state.Record) *pgx.Conn {
	t.Helper()
	c := rec.Credentials["postgres"]
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = c.Host, uint16(c.Port), c.User, c.Password.Reveal(), c.Database
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect to postgres of %s as %s: %v", rec.Address, c.User, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t testing.TB, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryString(t testing.TB, rec *state.Record, sql string) string {
	t.Helper()
	conn := pg(t, rec)
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(context.Background(), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// rdb connects as the handed-out user.
func rdb(t testing.TB, rec *state.Record) *redis.Client {
	t.Helper()
	c := rec.Credentials["redis"]
	cl := redis.NewClient(&redis.Options{Addr: c.Host + ":" + itoa(c.Port), Username: c.User, Password: c.Password.Reveal(), Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func itoa(n int) string {
	return strconv.Itoa(n)
}

func sha256File(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
