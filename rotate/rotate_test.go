package rotate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/state"
)

// Rotation against services that are not there fails with the service
// and step named, never a password, and leaves the record as it was.
// (The real servers are exercised by the pool tests in package sandboxer.)
func TestRotateFailsWithoutSecrets(t *testing.T) {
	rec := &state.Record{Address: `sandbox.a["~pool-1"]`, Credentials: map[string]state.Credentials{
		"postgres": {Host: "127.0.0.1", Port: 1, User: "app", Password: "old-pg-secret", Database: "app", AdminUser: "sbx_admin", AdminPassword: "admin-pg-secret"},
		"redis":    {Host: "127.0.0.1", Port: 1, User: "app", Password: "old-redis-secret", AdminUser: "sbx_admin", AdminPassword: "admin-redis-secret"},
		"mongo":    {Host: "127.0.0.1", Port: 1, User: "app", Password: "x"},
	}}
	_, err := Network{}.Rotate(context.Background(), rec)
	if err == nil {
		t.Fatal("rotation against closed ports succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"rotate postgres credentials", "rotate redis credentials", "no way to rotate credentials of service mongo"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	for _, secret := range []string{"old-pg-secret", "admin-pg-secret", "old-redis-secret", "admin-redis-secret"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error shows a secret: %q", msg)
		}
	}
	if rec.Credentials["redis"].Password != "old-redis-secret" {
		t.Error("the record was changed")
	}
}

func TestScrubKeepsTheChain(t *testing.T) {
	err := scrub(errors.Join(errors.New("pw=hunter2"), context.Canceled), "hunter2")
	if strings.Contains(err.Error(), "hunter2") || !errors.Is(err, context.Canceled) {
		t.Errorf("scrub: %q, is Canceled %v", err, errors.Is(err, context.Canceled))
	}
}

func TestNewPasswordsDiffer(t *testing.T) {
	seen := map[state.Secret]bool{}
	for range 100 {
		pw, err := NewPassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(pw.Reveal()) != 32 || seen[pw] {
			t.Fatalf("password %d characters, repeated %v", len(pw.Reveal()), seen[pw])
		}
		seen[pw] = true
	}
}
