package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBackupOncePerStore(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	backup := path + ".backup"
	noBackup := func(when string) {
		t.Helper()
		if _, err := os.Stat(backup); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: backup exists (%v)", when, err)
		}
	}

	// The command that creates the state has nothing to back up.
	first := Open(path)
	for i := range 2 {
		if err := first.Put(ctx, sampleRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	noBackup("after the creating command")

	// A no-op write is not a write: no backup either.
	if err := Open(path).Put(ctx, sampleRecord(0)); err != nil {
		t.Fatal(err)
	}
	noBackup("after a no-op write")

	// The next command's first write backs up the state as it was.
	before, err := Open(path).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := Open(path)
	changed := sampleRecord(0)
	changed.Generation = 99
	if err := second.Put(ctx, changed); err != nil {
		t.Fatal(err)
	}
	assertSnapshot(t, backup, before)
	if m := mode(t, backup); m != 0o600 {
		t.Errorf("backup mode = %o, want 600", m)
	}
	hash := hashFile(t, backup)

	// Later writes of the same command leave the backup alone.
	if err := second.Put(ctx, sampleRecord(5)); err != nil {
		t.Fatal(err)
	}
	if err := second.Delete(ctx, sampleRecord(1).Address); err != nil {
		t.Fatal(err)
	}
	if hashFile(t, backup) != hash {
		t.Errorf("backup rewritten by a second write of the same Store")
	}

	// A third command backs up again, replacing the old backup.
	before, err = Open(path).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := Open(path).Delete(ctx, sampleRecord(5).Address); err != nil {
		t.Fatal(err)
	}
	assertSnapshot(t, backup, before)
	if got := listDir(t, filepath.Dir(path)); !cmp.Equal(got, []string{"sandboxer.state", "sandboxer.state.backup"}) {
		t.Errorf("files in the state folder: %v", got)
	}
}

// assertSnapshot checks that the state file at path reads as want.
func assertSnapshot(t *testing.T, path string, want *Snapshot) {
	t.Helper()
	got, err := Open(path).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestModes(t *testing.T) {
	// Modes must come from the code, not from a friendly umask.
	old := umask(0)
	defer umask(old)

	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "sandboxer.state")
	newState(t, path, sampleRecord(1))
	if err := Open(path).Put(ctx, sampleRecord(2)); err != nil { // takes a backup
		t.Fatal(err)
	}
	s := Open(path)
	unlock, err := s.Lock(ctx, "apply", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	unlockInst, err := s.LockInstance(ctx, "sandbox.app[1]", "apply", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlockInst()

	want := map[string]os.FileMode{
		filepath.Join(root, "a"):      0o700,
		filepath.Join(root, "a", "b"): 0o700,
		path:                          0o600,
		path + ".backup":              0o600,
		path + ".lock":                0o600,
		path + ".locks":               0o700,
	}
	got := map[string]os.FileMode{}
	for p := range want {
		got[p] = mode(t, p)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
	for _, name := range listDir(t, path+".locks") {
		if m := mode(t, filepath.Join(path+".locks", name)); m != 0o600 {
			t.Errorf("instance lock %s mode = %o, want 600", name, m)
		}
	}
}
