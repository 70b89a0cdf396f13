package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/services/internal/enginetest"
	"github.com/sandboxer/sandboxer/state"
)

// Dump and Load against the local image, with keys in more than one
// database: every database's keys come back, and only those.
func TestDumpLoadDatabases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	image := enginetest.Image(t, "sandboxer.local/redis:7", "images/build.sh redis")
	hexs := func() string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	c := state.Credentials{User: "app_" + hexs(), Password: state.Secret(hexs()), AdminUser: "sbx_admin", AdminPassword: state.Secret(hexs())}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ACLFileName), ACLFile(c), 0o644); err != nil {
		t.Fatal(err)
	}
	ctr := enginetest.Start(ctx, t, enginetest.Spec{
		Image: image, Mounts: map[string]string{dir: "/run/sandboxer"}, Port: Port,
		Args: []string{"--aclfile", "/run/sandboxer/" + ACLFileName, "--save", "", "--appendonly", "no"},
	})
	c.Host, c.Port = "127.0.0.1", ctr.HostPort(ctx, Port)
	ctr.WaitFor(ctx, func(ctx context.Context) error { return Ping(ctx, c.Host, c.Port, c.User, c.Password, nil) })
	rdb := Client(c.Host, c.Port, c.User, c.Password, nil)
	defer rdb.Close()
	conn := rdb.Conn()
	defer conn.Close()
	for db, key := range map[int]string{0: "zero", 2: "two", 5: "five"} {
		if err := conn.Select(ctx, db).Err(); err != nil {
			t.Fatal(err)
		}
		if err := conn.Set(ctx, key, key, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "dump.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Dump(ctx, c, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := conn.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Set(ctx, "stray", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := Load(ctx, c, path); err != nil {
		t.Fatal(err)
	}
	for db, want := range map[int]string{0: "zero", 2: "two", 5: "five"} {
		if err := conn.Select(ctx, db).Err(); err != nil {
			t.Fatal(err)
		}
		keys, err := conn.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(keys, ",") != want {
			t.Errorf("database %d after load: keys %v, want [%s]", db, keys, want)
		}
	}
}
