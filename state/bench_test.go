package state

import (
	"context"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// seed creates a state with n realistic records in one transaction (n
// Puts would each fsync).
func seed(b *testing.B, n int) string {
	b.Helper()
	path := statePath(b)
	newState(b, path, sampleRecord(0))
	rawUpdate(b, path, func(tx *bolt.Tx) error {
		sb := tx.Bucket(bucketSandboxes)
		for i := 1; i < n; i++ {
			rec := sampleRecord(i)
			data, err := encodeRecord(rec)
			if err != nil {
				return err
			}
			if err := sb.Put([]byte(rec.Address), data); err != nil {
				return err
			}
		}
		return nil
	})
	return path
}

func BenchmarkSnapshot1000(b *testing.B) {
	ctx := context.Background()
	s := Open(seed(b, 1000))
	b.ReportAllocs()
	for b.Loop() {
		snap, err := s.Snapshot(ctx)
		if err != nil || len(snap.Records) != 1000 {
			b.Fatal(err, len(snap.Records))
		}
	}
}

// BenchmarkPut writes a changed record into a 1,000-record state each
// time: a real write, with bbolt's fsyncs.
func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	s := Open(seed(b, 1000))
	rec := sampleRecord(500)
	b.ReportAllocs()
	for b.Loop() {
		rec.Generation++
		if err := s.Put(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutUnchanged is the common re-apply case: nothing changes, so
// the file is only opened read-only.
func BenchmarkPutUnchanged(b *testing.B) {
	ctx := context.Background()
	s := Open(seed(b, 1000))
	rec := sampleRecord(500)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Put(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	s := Open(seed(b, 1000))
	addr := sampleRecord(500).Address
	b.ReportAllocs()
	for b.Loop() {
		if rec, err := s.Get(ctx, addr); err != nil || rec == nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenClose is the fixed cost every call pays for not keeping the
// database open.
func BenchmarkOpenClose(b *testing.B) {
	for _, mode := range []struct {
		name     string
		readOnly bool
	}{{"read-only", true}, {"read-write", false}} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			path := seed(b, 1000)
			b.ReportAllocs()
			for b.Loop() {
				db, err := openDB(ctx, path, mode.readOnly, !mode.readOnly) // writes walk the pages
				if err != nil {
					b.Fatal(err)
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLockUnlock(b *testing.B) {
	ctx := context.Background()
	s := Open(statePath(b))
	b.ReportAllocs()
	for b.Loop() {
		unlock, err := s.Lock(ctx, "apply", 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := unlock(); err != nil {
			b.Fatal(err)
		}
	}
}
