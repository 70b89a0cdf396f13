package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The PostgreSQL server for state backend tests: .ci/run starts one with
// scripts/pgserver.sh and exports its URL; with SANDBOXER_REQUIRE_PG=1 a
// missing one fails the tests that need it instead of skipping them.
const (
	PostgresURLEnv     = "SANDBOXER_TEST_PG_URL"
	PostgresRequireEnv = "SANDBOXER_REQUIRE_PG"
)

// PostgresURL returns the test server's URL, or skips tb without one
// (fails it when SANDBOXER_REQUIRE_PG is set).
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(PostgresURLEnv)
	if u != "" {
		return u
	}
	if v := os.Getenv(PostgresRequireEnv); v != "" && v != "0" && v != "false" {
		tb.Fatalf("%s is not set, and %s=1 requires a PostgreSQL server (start one with scripts/pgserver.sh)", PostgresURLEnv, PostgresRequireEnv)
	}
	tb.Skipf("%s is not set (start a server with scripts/pgserver.sh; %s=1 makes this a failure)", PostgresURLEnv, PostgresRequireEnv)
	return ""
}

// PostgresSchema creates a schema of its own for tb on the test server
// and returns a URL whose search_path selects it; the schema is dropped
// when tb ends.
func PostgresSchema(tb testing.TB) string {
	tb.Helper()
	base := PostgresURL(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "sbxtest_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("connect to the test PostgreSQL server: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Error(err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Error(err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
