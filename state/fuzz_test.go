package state

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// FuzzStateFile feeds damaged state files to every read and write path: it
// must return an error (naming the file), never panic or die of a fault
// (issue 8: a truncated file killed every command with SIGBUS).
//
// A case is a base file, one of fuzzBases or (base >= len) the patch
// alone, overwritten at off with patch and then cut to cut bytes (0: not
// cut). Starting from real states lets the fuzzer reach the pages bbolt
// reads, which random bytes almost never do.
func FuzzStateFile(f *testing.F) {
	bases := fuzzBases(f)
	for base := range bases {
		f.Add(uint8(base), uint32(0), uint32(0), []byte(nil))
		f.Add(uint8(base), uint32(8192), uint32(0), []byte(nil))
		f.Add(uint8(base), uint32(len(bases[base])-1), uint32(0), []byte(nil))
		f.Add(uint8(base), uint32(0), uint32(2*os.Getpagesize()+16), []byte{0xff, 0xff, 0xff, 0xff})
	}
	f.Add(uint8(255), uint32(0), uint32(0), []byte("not a state file"))
	f.Fuzz(func(t *testing.T, base uint8, cut, off uint32, patch []byte) {
		var data []byte
		if int(base) < len(bases) {
			data = bytes.Clone(bases[base])
			if len(data) > 0 && len(patch) > 0 {
				copy(data[int(off)%len(data):], patch)
			}
		} else {
			data = patch
		}
		if cut != 0 && int(cut) < len(data) {
			data = data[:cut]
		}
		path := filepath.Join(fuzzDir(t), "state.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		exercise(t, path)
	})
}

// exercise runs every Store entry point on the file at path.
func exercise(t *testing.T, path string) {
	ctx := context.Background()
	s := Open(path)
	named := func(op string, err error) {
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", op, err)
		}
	}
	typed := func(op string, err error) {
		var ce *CorruptError
		var fe *FutureSchemaError
		if err != nil && !errors.As(err, &ce) && !errors.As(err, &fe) {
			t.Errorf("%s: error %q is neither a *CorruptError nor a *FutureSchemaError", op, err)
		}
		named(op, err)
	}
	snap, err := s.Inspect(ctx)
	typed("inspect", err)
	_, err = s.Snapshot(ctx)
	typed("snapshot", err)
	_, err = s.Get(ctx, sampleRecord(1).Address)
	typed("get", err)
	typed("expect lineage", ignoreStale(s.ExpectLineage(ctx, "", 0)))
	if snap == nil {
		return // a damaged file: writes are refused by the same checks
	}
	// Writes on a file that reads: they may fail (a damaged page only a
	// write reaches), but must not panic, and must leave a file that
	// still opens.
	named("put", s.Put(ctx, sampleRecord(99)))
	named("delete", s.Delete(ctx, sampleRecord(1).Address))
	for addr := range snap.Damaged {
		if addr != "" { // a damaged page can hold an empty key, which no address names
			named("delete damaged", s.Delete(ctx, addr))
		}
	}
	_, err = Open(path).Inspect(ctx)
	typed("inspect after writes", err)
}

func ignoreStale(err error) error {
	var se *StaleError
	if errors.As(err, &se) {
		return nil
	}
	return err
}

// fuzzBases are real state files, built the same way on every run (fixed
// lineage, deterministic records), so a failing input replays exactly.
func fuzzBases(tb testing.TB) [][]byte {
	build := func(fn func(tx *bolt.Tx) error) []byte {
		path := filepath.Join(tb.TempDir(), "base.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			tb.Fatal(err)
		}
		steps := []func(*bolt.Tx) error{func(tx *bolt.Tx) error { return initMeta(tx, "00000000-0000-4000-8000-000000000000") }, fn}
		for _, step := range steps {
			if err := db.Update(step); err != nil {
				tb.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			tb.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		return data
	}
	put := func(n int, bad bool) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketSandboxes)
			for i := range n {
				data, err := encodeRecord(sampleRecord(i))
				if err != nil {
					return err
				}
				if err := b.Put([]byte(sampleRecord(i).Address), data); err != nil {
					return err
				}
			}
			if bad {
				return b.Put([]byte("sandbox.bad"), []byte(`{"schema_version":2}`))
			}
			return nil
		}
	}
	return [][]byte{
		build(func(*bolt.Tx) error { return nil }), // an empty state
		build(put(1, false)),                       // one record, one leaf page
		build(put(40, true)),                       // branch pages, a damaged record
		build(func(tx *bolt.Tx) error { // pages freed: a non-empty freelist
			if err := put(40, false)(tx); err != nil {
				return err
			}
			return tx.Bucket(bucketSandboxes).Delete([]byte(sampleRecord(3).Address))
		}),
	}
}

// fuzzDir is a fresh folder for one case, in memory when the machine has
// /dev/shm: every write fsyncs, and on a busy disk a few fsyncs can
// outlast the fuzzer's per-case deadline.
func fuzzDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "sandboxer-fuzz-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
