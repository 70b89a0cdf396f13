package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// TestSnapshotRestoreReset takes a snapshot with pgvector data, a
// RediSearch index and a plain key with a TTL, changes everything, and
// checks restore and reset bring it all back, owned by the handed-out
// role; then that a damaged file and a missing feature are refused with
// nothing changed.
func TestSnapshotRestoreReset(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	rec := e.create(t, "sandbox.src", 1, config.FeatureSet{"postgres": {"vector"}, "redis": {"search"}})
	conn := pg(t, rec)
	exec(t, conn, `CREATE TABLE items (id int PRIMARY KEY, embedding vector(3));
		INSERT INTO items VALUES (1, '[1,2,3]'), (2, '[4,5,6]');
		COMMENT ON TABLE items IS 'fixture';
		CREATE INDEX ON items USING hnsw (embedding vector_l2_ops);`)
	r := rdb(t, rec)
	must(t, r.Set(ctx, "greeting", "hello", time.Hour).Err())
	must(t, r.Do(ctx, "FT.CREATE", "idx", "SCHEMA", "title", "TEXT").Err())
	must(t, r.Do(ctx, "FT.ADD", "idx", "doc1", "1.0", "FIELDS", "title", "sandboxes").Err())

	st := snapshot.Store{Dir: filepath.Join(t.TempDir(), "snapshots"), Formats: services.SnapshotFormats}
	man, err := snapshot.Take(ctx, e.prov, st, rec, "base", time.Now())
	if err != nil {
		t.Fatalf("take: %v", err)
	}
	checkFiles(t, st, man, rec)

	// Change everything, then restore.
	exec(t, conn, `DELETE FROM items WHERE id = 1; CREATE TABLE extra (x int)`)
	must(t, r.Del(ctx, "greeting").Err())
	must(t, r.Set(ctx, "stray", "x", 0).Err())
	start := time.Now()
	if _, err := snapshot.Restore(ctx, e.prov, st, rec, "base"); err != nil {
		t.Fatalf("restore: %v", err)
	}
	t.Logf("restore (template kept at snapshot time) took %s", time.Since(start).Round(time.Millisecond))
	checkBase(t, rec)

	// A second instance with the same features but other credentials:
	// restore remaps ownership to its own role.
	other := e.create(t, "sandbox.other", 1, config.FeatureSet{"postgres": {"vector"}, "redis": {"search"}})
	if _, err := snapshot.Restore(ctx, e.prov, st, other, "base"); err != nil {
		t.Fatalf("restore into another instance: %v", err)
	}
	checkBase(t, other)
	if got := queryString(t, other, `SELECT tableowner FROM pg_tables WHERE tablename = 'items'`); got != other.Credentials["postgres"].User {
		t.Errorf("items owned by %q, want the handed-out role", got)
	}
	// The handed-out role can change what was restored.
	exec(t, pg(t, other), `ALTER TABLE items ADD COLUMN note text; DROP TABLE items`)

	t.Run("damaged", func(t *testing.T) {
		exec(t, pg(t, rec), `INSERT INTO items VALUES (9, '[9,9,9]')`)
		f, _ := man.File("postgres")
		p := filepath.Join(st.Path("base"), f.Name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			b[len(b)/2] ^= 0xff
			_ = os.WriteFile(p, b, 0o600)
		})
		_, err = snapshot.Restore(ctx, e.prov, st, rec, "base")
		var ce *snapshot.ChecksumError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("restore of a damaged snapshot: %v, want a checksum error", err)
		}
		if got := queryString(t, rec, `SELECT count(*)::text FROM items WHERE id = 9`); got != "1" {
			t.Errorf("the refused restore changed the data")
		}
	})

	t.Run("missing feature", func(t *testing.T) {
		bare := e.create(t, "sandbox.bare", 1, config.FeatureSet{"postgres": {}, "redis": {"search"}})
		exec(t, pg(t, bare), `CREATE TABLE mine (x int); INSERT INTO mine VALUES (42)`)
		_, err := snapshot.Restore(ctx, e.prov, st, bare, "base")
		var me *snapshot.MissingFeatureError
		if !errors.As(err, &me) || me.Feature != "vector" {
			t.Fatalf("restore into a sandbox without vector: %v, want a missing-feature error", err)
		}
		for _, w := range []string{`needs postgres feature "vector"`, "nothing was changed"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
		if got := queryString(t, bare, `SELECT x::text FROM mine`); got != "42" {
			t.Errorf("the refused restore changed the data")
		}
	})

	t.Run("reset", func(t *testing.T) {
		latest, err := snapshot.Latest(st, rec.Address)
		if err != nil || latest.Name != "base" {
			t.Fatalf("latest snapshot of %s: %v, %v", rec.Address, latest, err)
		}
		for i := range 3 {
			exec(t, pg(t, rec), `TRUNCATE items`)
			must(t, rdb(t, rec).FlushDB(ctx).Err())
			start := time.Now()
			if _, err := snapshot.Restore(ctx, e.prov, st, rec, latest.Name); err != nil {
				t.Fatalf("reset: %v", err)
			}
			t.Logf("reset %d took %s", i, time.Since(start).Round(time.Millisecond))
			checkBase(t, rec)
		}
	})
}

// checkBase checks the "base" data is what rec holds: both rows with their
// vectors (and a vector query using the index), the comment, the Redis key
// with its TTL and the search index answering.
func checkBase(t *testing.T, rec *state.Record) {
	t.Helper()
	ctx := context.Background()
	if got := queryString(t, rec, `SELECT string_agg(id || '=' || embedding::text, ' ' ORDER BY id) FROM items`); got != "1=[1,2,3] 2=[4,5,6]" {
		t.Errorf("items = %q", got)
	}
	if got := queryString(t, rec, `SELECT id::text FROM items ORDER BY embedding <-> '[4,5,5]' LIMIT 1`); got != "2" {
		t.Errorf("nearest neighbour = %q", got)
	}
	if got := queryString(t, rec, `SELECT obj_description('items'::regclass)`); got != "fixture" {
		t.Errorf("comment = %q", got)
	}
	if got := queryString(t, rec, `SELECT count(*)::text FROM pg_tables WHERE tablename = 'extra'`); got != "0" {
		t.Errorf("a table made after the snapshot survived")
	}
	r := rdb(t, rec)
	if v, err := r.Get(ctx, "greeting").Result(); err != nil || v != "hello" {
		t.Errorf("greeting = %q, %v", v, err)
	}
	if ttl, err := r.TTL(ctx, "greeting").Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Errorf("greeting ttl = %v, %v", ttl, err)
	}
	if n, err := r.Exists(ctx, "stray").Result(); err != nil || n != 0 {
		t.Errorf("a key made after the snapshot survived")
	}
	res, err := r.Do(ctx, "FT.SEARCH", "idx", "sandboxes").Slice()
	if err != nil || len(res) == 0 || res[0] != int64(1) {
		t.Errorf("FT.SEARCH after restore = %v, %v", res, err)
	}
}

func checkFiles(t *testing.T, st snapshot.Store, man *snapshot.Manifest, rec *state.Record) {
	t.Helper()
	var secrets []string
	for _, c := range rec.Credentials {
		secrets = append(secrets, c.Password.Reveal(), c.AdminPassword.Reveal())
	}
	fi, err := os.Stat(st.Path(man.Name))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("snapshot directory mode %v, want 0700", fi.Mode().Perm())
	}
	entries, err := os.ReadDir(st.Path(man.Name))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("snapshot holds %d files, want manifest + 2", len(entries))
	}
	for _, en := range entries {
		info, _ := en.Info()
		b, err := os.ReadFile(filepath.Join(st.Path(man.Name), en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range secrets {
			if strings.Contains(string(b), sec) {
				t.Errorf("%s holds a credential", en.Name())
			}
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", en.Name(), info.Mode().Perm())
		}
	}
	if len(man.Files) != 2 || man.Size() == 0 || man.Source.Generation != 1 {
		t.Errorf("manifest: %+v", man)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
