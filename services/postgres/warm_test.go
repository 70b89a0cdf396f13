package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
)

// Against a real server: a repeated probe reuses its login, a server that
// dropped the connection is logged into again, and credentials that no
// longer work fail the probe even though a connection made with them was
// kept.
func TestWarmPing(t *testing.T) {
	admin := testenv.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ac, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	role, password := "warm_"+hex.EncodeToString(b[:]), "pw-"+hex.EncodeToString(b[:])
	if _, err := ac.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD "+QuoteLiteral(password)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = ac.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role)
		_, _ = ac.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	c := state.Credentials{Host: u.Hostname(), Port: port, User: role, Password: state.Secret(password), Database: "postgres"}
	backends := func() int {
		var n int
		if err := ac.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE usename = $1", role).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var w Warm
	defer w.Close()
	for range 5 {
		if err := w.Ping(ctx, c, nil); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	}
	if n := backends(); n != 1 {
		t.Errorf("5 probes left %d backends, want the one kept login", n)
	}
	// The server drops the connection: the next probe logs in again.
	if _, err := ac.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := w.Ping(ctx, c, nil); err != nil {
		t.Fatalf("Ping after the server dropped the connection: %v", err)
	}
	// Credentials that stop working fail the probe once the kept
	// connection is gone, as a server that restarted would drop it.
	if _, err := ac.Exec(ctx, "ALTER ROLE "+role+" PASSWORD 'changed'"); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := w.Ping(ctx, c, nil); err == nil {
		t.Error("Ping with credentials the server no longer takes succeeded")
	}
	// Forget closes the kept login.
	if _, err := ac.Exec(ctx, "ALTER ROLE "+role+" PASSWORD "+QuoteLiteral(password)); err != nil {
		t.Fatal(err)
	}
	if err := w.Ping(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	w.Forget(c)
	time.Sleep(100 * time.Millisecond)
	if n := backends(); n != 0 {
		t.Errorf("after Forget %d backends are left", n)
	}
}
