package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestLineageStable(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	s := Open(path)
	var lineage string
	for i := range 3 {
		if err := s.Put(ctx, sampleRecord(i)); err != nil {
			t.Fatal(err)
		}
		snap, err := Open(path).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			lineage = snap.Lineage
		}
		if snap.Lineage != lineage {
			t.Errorf("after put %d lineage = %q, want %q", i, snap.Lineage, lineage)
		}
	}
	if !uuidRE.MatchString(lineage) {
		t.Errorf("lineage %q is not a random UUID", lineage)
	}
	other := statePath(t)
	newState(t, other, sampleRecord(0))
	snap, err := Open(other).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Lineage == lineage {
		t.Errorf("two state files share lineage %q", lineage)
	}
}

func TestForeignLineageRefused(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, path string) // replaces the file under the Store
		gotNone bool                            // the file is gone rather than replaced
	}{
		{
			name: "replaced by another state",
			replace: func(t *testing.T, path string) {
				other := statePath(t)
				newState(t, other, sampleRecord(1))
				if err := os.Rename(other, path); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "removed",
			replace: func(t *testing.T, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			},
			gotNone: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := statePath(t)
			newState(t, path, sampleRecord(1))
			s := Open(path)
			before, err := s.Snapshot(ctx) // the Store now knows the lineage
			if err != nil {
				t.Fatal(err)
			}
			tt.replace(t, path)
			var hash string
			if !tt.gotNone {
				hash = hashFile(t, path)
			}

			writes := map[string]func() error{
				"put":    func() error { return s.Put(ctx, sampleRecord(2)) },
				"delete": func() error { return s.Delete(ctx, sampleRecord(1).Address) },
			}
			for name, write := range writes {
				err := write()
				var le *LineageError
				if !errors.As(err, &le) {
					t.Fatalf("%s: err = %v, want a *LineageError", name, err)
				}
				if le.Want != before.Lineage || (le.Got == "") != tt.gotNone || le.Path != path {
					t.Errorf("%s: LineageError = %+v, want Want=%s", name, le, before.Lineage)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("%s: error %q does not name the file", name, err)
				}
			}
			if tt.gotNone {
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused write created the file: %v", err)
				}
			} else if hashFile(t, path) != hash {
				t.Errorf("a refused write changed the file")
			}
		})
	}
}

func TestExpectLineage(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	newState(t, path, sampleRecord(1), sampleRecord(2))
	snap, err := Open(path).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		lineage string
		serial  uint64
		want    *StaleError
	}{
		{"unchanged", path, snap.Lineage, snap.Serial, nil},
		{"serial moved", path, snap.Lineage, snap.Serial - 1,
			&StaleError{Path: path, WantLineage: snap.Lineage, GotLineage: snap.Lineage, WantSerial: snap.Serial - 1, GotSerial: snap.Serial}},
		{"other lineage", path, "other", snap.Serial,
			&StaleError{Path: path, WantLineage: "other", GotLineage: snap.Lineage, WantSerial: snap.Serial, GotSerial: snap.Serial}},
		{"plan against nothing, state now exists", path, "", 0,
			&StaleError{Path: path, WantLineage: "", GotLineage: snap.Lineage, WantSerial: 0, GotSerial: snap.Serial}},
		{"missing file, plan against nothing", filepath.Join(t.TempDir(), "none"), "", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Open(tt.path).ExpectLineage(ctx, tt.lineage, tt.serial)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			var se *StaleError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *StaleError", err)
			}
			if diff := cmp.Diff(tt.want, se); diff != "" {
				t.Errorf("StaleError (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnsureLineage(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	s := Open(path)
	lineage, err := s.EnsureLineage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !uuidRE.MatchString(lineage) {
		t.Errorf("lineage %q is not a random UUID", lineage)
	}
	// An empty state now exists, and later calls and writes keep its lineage.
	assertSnapshot(t, path, &Snapshot{Lineage: lineage, Records: map[string]*Record{}})
	if err := s.Put(ctx, sampleRecord(1)); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, Open(path)} {
		if again, err := st.EnsureLineage(ctx); err != nil || again != lineage {
			t.Errorf("EnsureLineage again = %q, %v; want %q", again, err, lineage)
		}
	}
	if _, err := os.Stat(path + ".backup"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the creating command took a backup (%v)", err)
	}
	// A replaced file is refused.
	other := statePath(t)
	newState(t, other, sampleRecord(2))
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	var le *LineageError
	if _, err := s.EnsureLineage(ctx); !errors.As(err, &le) {
		t.Errorf("EnsureLineage on a replaced file: err = %v, want a *LineageError", err)
	}
}
