package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// hexOf returns a deterministic 64-character hex string, the size of a
// container id or a generated password.
func hexOf(parts ...any) string {
	sum := sha256.Sum256([]byte(fmt.Sprint(parts...)))
	return hex.EncodeToString(sum[:])
}

// sampleRecord is a realistic record: two services, credentials,
// resources, times.
func sampleRecord(i int) *Record {
	created := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC).Add(time.Duration(i) * time.Minute)
	rec := &Record{
		Address:  fmt.Sprintf("sandbox.app[%d]", i),
		Project:  "shop",
		OnDemand: i%3 == 0,
		Services: []string{"postgres", "redis"},
		Features: map[string][]string{
			"postgres": {"pgcrypto", "pgvector", "postgis"},
			"redis":    {"json"},
		},
		AvailableExtensions: map[string][]string{
			"postgres": {"btree_gin", "citext", "hstore", "pg_trgm", "pgcrypto", "pgvector", "postgis", "uuid-ossp"},
		},
		Credentials: map[string]Credentials{
			"postgres": {
				Host: "127.0.0.1", Port: 40000 + i, User: "app", Password: Secret(hexOf("pg", i)), Database: "app",
				AdminUser: "postgres", AdminPassword: Secret(hexOf("pgadmin", i)),
			},
			"redis": {Host: "127.0.0.1", Port: 50000 + i, User: "default", Password: Secret(hexOf("redis", i))},
		},
		Resources: Resources{
			Network: fmt.Sprintf("sbx-shop-%d", i),
			Containers: map[string]string{
				"postgres": hexOf("ctr-pg", i),
				"redis":    hexOf("ctr-redis", i),
			},
			Volumes: []string{fmt.Sprintf("sbx-shop-%d-pgdata", i), fmt.Sprintf("sbx-shop-%d-redisdata", i)},
		},
		CreatedAt:  created,
		Generation: i%5 + 1,
	}
	if i%2 == 0 {
		rec.ExpiresAt = created.Add(24 * time.Hour)
	}
	return rec
}

// statePath returns a path for a state file inside a fresh folder.
func statePath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "sandboxer.state")
}

// newState creates a state file holding recs, through the Store.
func newState(t testing.TB, path string, recs ...*Record) {
	t.Helper()
	s := Open(path)
	ctx := context.Background()
	if len(recs) == 0 {
		// An empty but existing state: put and delete one record.
		recs = []*Record{{Address: "sandbox.tmp"}}
		defer func() {
			if err := s.Delete(ctx, "sandbox.tmp"); err != nil {
				t.Fatal(err)
			}
		}()
	}
	for _, r := range recs {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
}

// rawUpdate edits a bbolt file directly, bypassing the Store's checks, to
// build files the Store itself would never write.
func rawUpdate(t testing.TB, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func hashFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return hexOf(string(data))
}

func listDir(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func mode(t testing.TB, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func umask(m int) int { return unix.Umask(m) }
