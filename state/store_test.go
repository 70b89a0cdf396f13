package state

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRoundTrip(t *testing.T) {
	full := sampleRecord(7)
	noExpiry := sampleRecord(1)
	tests := []struct {
		name string
		rec  *Record
	}{
		{"full", full},
		{"no expiry", noExpiry},
		{"address only", &Record{Address: "sandbox.bare"}},
		{"odd address", &Record{Address: `module.a["x/y z"].sandbox.ü`, Project: "p", Services: []string{}}},
		{"local time zone", &Record{
			Address:   "sandbox.tz",
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600)),
		}},
	}
	ctx := context.Background()
	path := statePath(t)
	s := Open(path)
	want := map[string]*Record{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Put(ctx, tt.rec); err != nil {
				t.Fatal(err)
			}
			want[tt.rec.Address] = tt.rec
			got, err := Open(path).Get(ctx, tt.rec.Address)
			if err != nil {
				t.Fatal(err)
			}
			// omitempty turns an empty map into nil; nothing distinguishes them.
			if diff := cmp.Diff(tt.rec, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Get after Put (-put +got):\n%s", diff)
			}
		})
	}
	snap, err := Open(path).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, snap.Records, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Snapshot records (-want +got):\n%s", diff)
	}
	if snap.Serial != uint64(len(tests)) {
		t.Errorf("serial = %d, want %d", snap.Serial, len(tests))
	}
}

func TestMissingFileReadsEmptyAndCreatesNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "sub", "sandboxer.state")
	s := Open(path)
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}

	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Snapshot{Records: map[string]*Record{}}, snap); diff != "" {
		t.Errorf("Snapshot of a missing file (-want +got):\n%s", diff)
	}
	if rec, err := s.Get(ctx, "sandbox.a"); rec != nil || err != nil {
		t.Errorf("Get = %v, %v; want nil, nil", rec, err)
	}
	if err := s.ExpectLineage(ctx, "", 0); err != nil {
		t.Errorf("ExpectLineage(\"\", 0) = %v", err)
	}
	if err := s.Delete(ctx, "sandbox.a"); err != nil {
		t.Errorf("Delete = %v", err)
	}
	if got := listDir(t, root); len(got) != 0 {
		t.Errorf("files created by reads and a no-op delete: %v", got)
	}
}

func TestSerialMovesOnlyOnChange(t *testing.T) {
	a := sampleRecord(1)
	a2 := sampleRecord(1)
	a2.Generation++
	b := sampleRecord(2)

	type step struct {
		name       string
		put        *Record
		del        string
		wantSerial uint64
	}
	steps := []step{
		{name: "first put creates", put: a, wantSerial: 1},
		{name: "same record again", put: sampleRecord(1), wantSerial: 1},
		{name: "changed record", put: a2, wantSerial: 2},
		{name: "second record", put: b, wantSerial: 3},
		{name: "delete absent", del: "sandbox.absent", wantSerial: 3},
		{name: "delete present", del: b.Address, wantSerial: 4},
		{name: "delete again", del: b.Address, wantSerial: 4},
		{name: "same record, new Store", put: a2, wantSerial: 4},
	}
	ctx := context.Background()
	path := statePath(t)
	s := Open(path)
	var lastHash string
	var lastSerial uint64
	for _, st := range steps {
		if st.name == "same record, new Store" {
			s = Open(path)
		}
		var err error
		if st.put != nil {
			err = s.Put(ctx, st.put)
		} else {
			err = s.Delete(ctx, st.del)
		}
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		snap, err := Open(path).Snapshot(ctx)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if snap.Serial != st.wantSerial {
			t.Errorf("%s: serial = %d, want %d", st.name, snap.Serial, st.wantSerial)
		}
		// A no-op leaves the file byte-for-byte alone: not even an empty
		// bbolt transaction is committed.
		h := hashFile(t, path)
		if st.wantSerial == lastSerial && h != lastHash {
			t.Errorf("%s: file changed without a serial bump", st.name)
		}
		lastHash, lastSerial = h, st.wantSerial
	}
}

// Writers from separate Stores (as separate processes would be) serialise
// on bbolt's file lock: every write lands and bumps the serial once.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	newState(t, path, sampleRecord(0))
	const n = 8
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		go func() { errs <- Open(path).Put(ctx, sampleRecord(i)) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	snap, err := Open(path).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Records) != n+1 || snap.Serial != n+1 {
		t.Errorf("%d records, serial %d; want %d and %d", len(snap.Records), snap.Serial, n+1, n+1)
	}
}

func TestInvalidCalls(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	path := statePath(t)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"put nil", func() error { return Open(path).Put(ctx, nil) }, "record has no address"},
		{"put without address", func() error { return Open(path).Put(ctx, &Record{Project: "p"}) }, "record has no address"},
		{"delete empty address", func() error { return Open(path).Delete(ctx, "") }, "empty address"},
		{"empty path", func() error { _, err := Open("").Snapshot(ctx); return err }, "no state file path"},
		{"canceled put", func() error { return Open(path).Put(canceled, sampleRecord(1)) }, "context canceled"},
		{"canceled lock", func() error { _, err := Open(path).Lock(canceled, "apply", time.Second); return err }, "context canceled"},
		{"lock empty instance", func() error { _, err := Open(path).LockInstance(ctx, "", "apply", 0); return err }, "empty address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if got := listDir(t, filepath.Dir(path)); len(got) != 0 {
		t.Errorf("invalid calls created %v", got)
	}
}
