package state

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

func TestUnusableFilesRefusedAndUntouched(t *testing.T) {
	addr := sampleRecord(1).Address
	write := func(data []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	randomBytes := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}
	// tamper builds a good state, then edits it behind the Store's back.
	tamper := func(fn func(tx *bolt.Tx) error) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			newState(t, path, sampleRecord(1))
			rawUpdate(t, path, fn)
		}
	}
	// cut builds a good state of several pages, then cuts it to at(used)
	// bytes, where used is the size bbolt says its pages take.
	cut := func(at func(used int64) int64) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			var recs []*Record
			for i := range 30 {
				recs = append(recs, sampleRecord(i))
			}
			newState(t, path, recs...)
			if err := os.Truncate(path, at(boltUsedSize(t, path))); err != nil {
				t.Fatal(err)
			}
		}
	}
	page := int64(os.Getpagesize())
	putRaw := func(value string) func(t *testing.T, path string) {
		return tamper(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSandboxes).Put([]byte(addr), []byte(value))
		})
	}

	tests := []struct {
		name string
		make func(t *testing.T, path string)
		want string // in the error message
		// recordLevel: one record is bad, the file is ours. Delete of that
		// record still works (it is the way out), so it is not tried.
		recordLevel bool
		// pageLevel: a page that one lookup may not reach is bad. Reading
		// everything and writing anything are refused; a lookup elsewhere
		// (get, the lineage) may succeed, so it is not tried.
		pageLevel bool
	}{
		{name: "empty file", make: write(nil), want: "the file is empty"},
		{name: "a few random bytes", make: write(randomBytes(100)), want: "not a bbolt database"},
		{name: "64 KiB of random bytes", make: write(randomBytes(64 << 10)), want: "not a bbolt database"},
		{name: "a JSON file", make: write([]byte(`{"version": 4, "serial": 1, "lineage": "x", "resources": []}`)), want: "not a bbolt database"},
		{
			name: "bbolt file of another program",
			make: func(t *testing.T, path string) {
				rawUpdate(t, path, func(tx *bolt.Tx) error {
					b, err := tx.CreateBucket([]byte("users"))
					if err != nil {
						return err
					}
					return b.Put([]byte("alice"), []byte("admin"))
				})
			},
			want: `no "meta" bucket: not a sandboxer state file`,
		},
		{
			name: "empty bbolt file",
			make: func(t *testing.T, path string) {
				rawUpdate(t, path, func(*bolt.Tx) error { return nil })
			},
			want: `no "meta" bucket`,
		},
		{
			name: "no sandboxes bucket",
			make: tamper(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketSandboxes) }),
			want: `no "sandboxes" bucket`,
		},
		{
			name: "serial of the wrong size",
			make: tamper(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySerial, []byte("7")) }),
			want: "serial is not an 8-byte integer",
		},
		{
			name: "no lineage",
			make: tamper(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyLineage) }),
			want: "no lineage",
		},
		{
			name: "garbage in the data pages",
			make: func(t *testing.T, path string) {
				newState(t, path, sampleRecord(1), sampleRecord(2))
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				page := os.Getpagesize()
				copy(data[2*page:], randomBytes(len(data)-2*page)) // keep both meta pages
				write(data)(t, path)
			},
			want: "damaged",
		},
		// A file cut short: bbolt would read past the end of its mapping
		// and die of SIGBUS (issue 8).
		{name: "cut to 1 byte", make: cut(func(int64) int64 { return 1 }), want: "not a bbolt database"},
		{name: "cut inside the first page", make: cut(func(int64) int64 { return 100 }), want: "shorter than its two"},
		{name: "cut to one page", make: cut(func(int64) int64 { return page }), want: "shorter than its two"},
		{name: "cut inside the second page", make: cut(func(int64) int64 { return page + 100 }), want: "shorter than its two"},
		{name: "cut to the two header pages", make: cut(func(int64) int64 { return 2 * page }), want: "the file was cut short"},
		{name: "cut to 8192 bytes", make: cut(func(int64) int64 { return 8192 }), want: "the file was cut short"},
		{name: "cut by one page", make: cut(func(used int64) int64 { return used - page }), want: "the file was cut short"},
		{name: "cut by one byte", make: cut(func(used int64) int64 { return used - 1 }), want: "the file was cut short"},
		{name: "cut in half", make: cut(func(used int64) int64 { return used / 2 }), want: "the file was cut short"},
		// Right-sized, but a page refers outside itself: bbolt would read
		// past its mapping, or copy gigabytes on the next write.
		{name: "a value size past its page", make: patchPage(boltLeafPageFlag, 16+12, 4, 0x7fffffff), want: "element 0 lies outside the page", pageLevel: true},
		{name: "a child page past the pages in use", make: patchPage(boltBranchPageFlag, 16+8, 8, 1<<40), want: "out of range", pageLevel: true},
		{name: "a page claiming too many elements", make: patchPage(boltLeafPageFlag, 10, 2, 0xfffe), want: "more than it holds", pageLevel: true},
		{name: "a free page that is in use", make: patchPage(boltFreelistPageFlag, 16, 8, 2), want: "out of range or in use", pageLevel: true},
		{name: "record not JSON", make: putRaw(`not json{`), want: "invalid character", recordLevel: true},
		{name: "record with an unknown field", make: putRaw(`{"schema_version":1,"address":"` + addr + `","bogus":true}`), want: `unknown field "bogus"`, recordLevel: true},
		{name: "record without schema version", make: putRaw(`{"address":"` + addr + `"}`), want: "no schema_version field", recordLevel: true},
		{name: "record from an unknown old version", make: putRaw(`{"schema_version":0,"address":"` + addr + `"}`), want: "no upgrade from schema version 0", recordLevel: true},
		{name: "record under another address", make: putRaw(`{"schema_version":1,"address":"sandbox.other"}`), want: `names itself "sandbox.other"`, recordLevel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "sandboxer.state")
			tt.make(t, path)
			hash := hashFile(t, path)
			files := listDir(t, dir)

			s := Open(path)
			ops := map[string]func() error{
				"snapshot": func() error { _, err := s.Snapshot(ctx); return err },
				"get":      func() error { _, err := s.Get(ctx, addr); return err },
				"put":      func() error { return s.Put(ctx, sampleRecord(1)) },
			}
			if !tt.recordLevel {
				ops["delete"] = func() error { return s.Delete(ctx, addr) }
				ops["expect lineage"] = func() error { return s.ExpectLineage(ctx, "", 0) }
			}
			if tt.pageLevel {
				delete(ops, "get")
				delete(ops, "expect lineage")
				ops["put"] = func() error { return s.Put(ctx, sampleRecord(99)) }
			}
			for name, op := range ops {
				err := op()
				var ce *CorruptError
				if !errors.As(err, &ce) {
					t.Errorf("%s: err = %v, want a *CorruptError", name, err)
					continue
				}
				msg := err.Error()
				if name == "put" {
					t.Logf("%s: %s", name, msg)
				}
				if !strings.Contains(msg, path) || !strings.Contains(msg, tt.want) || !strings.Contains(msg, "is damaged") {
					t.Errorf("%s: error %q should name the file, say it is damaged and say %q", name, msg, tt.want)
				}
				if ce.Fix == "" || !strings.Contains(msg, ce.Fix) {
					t.Errorf("%s: error %q should say how to get out (Fix %q)", name, msg, ce.Fix)
				}
				if tt.recordLevel && ce.Address != addr {
					t.Errorf("%s: Address = %q, want %q", name, ce.Address, addr)
				}
			}
			if hashFile(t, path) != hash {
				t.Errorf("the file was modified")
			}
			if got := listDir(t, dir); !cmp.Equal(got, files) {
				t.Errorf("files in the folder: %v, want %v", got, files)
			}
		})
	}
}

// A bad record is reported, not fatal to the rest: other records can be
// written, and the bad one deleted, which is how a user gets out.
func TestBadRecordCanBeDeleted(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	newState(t, path, sampleRecord(1))
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSandboxes).Put([]byte("sandbox.bad"), []byte("{"))
	})
	s := Open(path)
	if err := s.Put(ctx, sampleRecord(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "sandbox.bad"); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Records) != 2 {
		t.Errorf("records: %d, want 2", len(snap.Records))
	}
}

// boltUsedSize is the size of the pages in use, as bbolt itself sees it.
func boltUsedSize(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var size int64
	if err := db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	return size
}

// patchPage builds a state with branch pages, then writes v, width bytes
// in the machine's byte order (as bbolt does), at offset off of the first
// page of the given kind that has elements.
func patchPage(flags uint16, off, width int, v uint64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		var recs []*Record
		for i := range 30 {
			recs = append(recs, sampleRecord(i))
		}
		newState(t, path, recs...)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ne := binary.NativeEndian
		page := os.Getpagesize()
		for at := 2 * page; at+page <= len(data); at += page {
			if ne.Uint16(data[at+8:]) != flags || ne.Uint16(data[at+10:]) == 0 {
				continue
			}
			switch width {
			case 2:
				ne.PutUint16(data[at+off:], uint16(v))
			case 4:
				ne.PutUint32(data[at+off:], uint32(v))
			default:
				ne.PutUint64(data[at+off:], v)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("no page with flags %#x and elements", flags)
	}
}
