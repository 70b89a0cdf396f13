package pgstate_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
	"github.com/sandboxer/sandboxer/state/statetest"
)

// seeded returns a snapshot of n records, for Import.
func seeded(n int) *state.Snapshot {
	snap := &state.Snapshot{Lineage: state.NewLineage(), Serial: uint64(n), Records: map[string]*state.Record{}}
	for i := range n {
		r := statetest.Record(i, "bench")
		r.OnDemand = true
		snap.Records[r.Address] = r
	}
	return snap
}

func pgBackend(b *testing.B, n int) state.Backend {
	b.Helper()
	db := pgstate.NewDB(testenv.PostgresSchema(b))
	b.Cleanup(db.Close)
	be := pgstate.Open(db, nil)
	b.Cleanup(func() { be.Close() })
	if err := be.Import(b.Context(), seeded(n)); err != nil {
		b.Fatal(err)
	}
	return be
}

func boltBackend(b *testing.B, n int) state.Backend {
	b.Helper()
	s := state.Open(filepath.Join(b.TempDir(), "state.db"))
	if err := s.Import(b.Context(), seeded(n)); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPut writes one on-demand record into states of growing size:
// a write is O(1), so ns/op stays flat from 10 to 1,000 records.
func BenchmarkPut(b *testing.B) {
	for _, kind := range []string{"pg", "bbolt"} {
		for _, n := range []int{10, 1000} {
			b.Run(fmt.Sprintf("backend=%s/records=%d", kind, n), func(b *testing.B) {
				be := boltBackend
				if kind == "pg" {
					be = pgBackend
				}
				s := be(b, n)
				rec := statetest.Record(n+1, "bench")
				b.ResetTimer()
				for i := range b.N {
					rec.Generation = i + 2
					if err := s.Put(b.Context(), rec); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSnapshot1000 reads a state of 1,000 records, what plan
// --refresh=false spends most of its state time on: pg against bbolt.
func BenchmarkSnapshot1000(b *testing.B) {
	for _, kind := range []string{"pg", "bbolt"} {
		b.Run("backend="+kind, func(b *testing.B) {
			be := boltBackend
			if kind == "pg" {
				be = pgBackend
			}
			s := be(b, 1000)
			b.ResetTimer()
			for range b.N {
				snap, err := s.Snapshot(b.Context())
				if err != nil || len(snap.Records) != 1000 {
					b.Fatal(len(snap.Records), err)
				}
			}
		})
	}
}

// BenchmarkCacheHit is the state side of an API request for a key that
// is already provisioned: take the instance lock, read the record,
// release. It reports the p99 latency.
func BenchmarkCacheHit(b *testing.B) {
	s := pgBackend(b, 1000)
	addr := statetest.Record(500, "bench").Address
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		unlock, err := s.LockInstance(b.Context(), addr, "request", time.Second)
		if err != nil {
			b.Fatal(err)
		}
		rec, err := s.Get(b.Context(), addr)
		if err != nil || rec == nil {
			b.Fatal(rec, err)
		}
		if err := unlock(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
