// Package gotest shows a Go test that gets a real PostgreSQL and Redis
// from sandboxer: one call, credentials back, released when the test ends
// (run with SANDBOXER_KEEP=1 to keep it for the next run, which then
// reuses it in milliseconds).
package gotest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sandboxer/sandboxer/sandboxertest"
)

func TestShop(t *testing.T) {
	sandboxertest.RequireDocker(t) // skips without an engine; CI sets SANDBOXER_REQUIRE_DOCKER=1 to fail instead
	sb := sandboxertest.Request(t, "sandbox.test")
	ctx := context.Background()

	t.Run("pgx", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, sb.PostgresURL())
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(ctx)
		// The vector extension was created for us; the role owns the
		// database but is not a superuser.
		for _, q := range []string{
			`CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, embedding vector(3))`,
			`TRUNCATE items`,
			`INSERT INTO items VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]')`,
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var nearest int
		if err := conn.QueryRow(ctx, `SELECT id FROM items ORDER BY embedding <-> '[1,0.05,0]' LIMIT 1`).Scan(&nearest); err != nil {
			t.Fatal(err)
		}
		if nearest != 1 {
			t.Errorf("nearest neighbour = %d, want 1", nearest)
		}
		var super bool
		if err := conn.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
			t.Fatal(err)
		}
		if super {
			t.Error("the handed-out role is a superuser")
		}
	})

	t.Run("go-redis", func(t *testing.T) {
		opt, err := redis.ParseURL(sb.RedisURL())
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		if err := rdb.Set(ctx, "cart:7", "3 items", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		got, err := rdb.Get(ctx, "cart:7").Result()
		if err != nil || got != "3 items" {
			t.Errorf("GET = %q, %v", got, err)
		}
		// The handed-out user cannot reconfigure the server.
		if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err == nil {
			t.Error("CONFIG SET succeeded for the handed-out user")
		}
	})
}
