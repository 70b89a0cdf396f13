package state

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// One damaged record must not block the rest (issue 8): Inspect sets it
// aside, Snapshot names it, Get of any other record works, and Delete
// removes it without decoding it.
func TestDamagedRecordsSetAside(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	newState(t, path, sampleRecord(1), sampleRecord(2))
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSandboxes)
		if err := b.Put([]byte("sandbox.bad"), []byte("not json{")); err != nil {
			return err
		}
		if err := b.Put([]byte("sandbox.future"), []byte(`{"schema_version":99,"address":"sandbox.future","hover":true}`)); err != nil {
			return err
		}
		_, err := b.CreateBucket([]byte("sandbox.nested"))
		return err
	})
	damaged := []string{"sandbox.bad", "sandbox.future", "sandbox.nested"}
	good := []string{sampleRecord(1).Address, sampleRecord(2).Address}

	s := Open(path)
	snap, err := s.Inspect(ctx)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if diff := cmp.Diff(good, sortedKeys(snap.Records)); diff != "" {
		t.Errorf("readable records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(damaged, sortedKeys(snap.Damaged)); diff != "" {
		t.Errorf("damaged records (-want +got):\n%s", diff)
	}
	var fe *FutureSchemaError
	if !errors.As(snap.Damaged["sandbox.future"], &fe) || fe.Address != "sandbox.future" {
		t.Errorf("sandbox.future: %v, want a *FutureSchemaError naming it", snap.Damaged["sandbox.future"])
	}
	for _, a := range []string{"sandbox.bad", "sandbox.nested"} {
		var ce *CorruptError
		if !errors.As(snap.Damaged[a], &ce) || ce.Address != a {
			t.Errorf("%s: %v, want a *CorruptError naming it", a, snap.Damaged[a])
		}
	}

	// Snapshot refuses, naming every damaged record and the way out.
	_, err = s.Snapshot(ctx)
	if err == nil {
		t.Fatal("Snapshot of a state with damaged records succeeded")
	}
	for _, a := range damaged {
		if !strings.Contains(err.Error(), "state rm "+a) {
			t.Errorf("Snapshot error %q should say how to forget %s", err, a)
		}
	}

	// Other records are read and written as usual.
	if rec, err := s.Get(ctx, good[0]); err != nil || rec == nil {
		t.Errorf("Get %s = %v, %v", good[0], rec, err)
	}
	if err := s.Put(ctx, sampleRecord(3)); err != nil {
		t.Errorf("Put beside damaged records: %v", err)
	}
	// The damaged ones: Get says so, Put refuses to hide the damage,
	// Delete removes them.
	for _, a := range damaged {
		if _, err := s.Get(ctx, a); err == nil || !strings.Contains(err.Error(), a) {
			t.Errorf("Get %s: %v, want an error naming it", a, err)
		}
		if err := s.Put(ctx, &Record{Address: a}); err == nil {
			t.Errorf("Put over damaged %s succeeded", a)
		}
		if err := s.Delete(ctx, a); err != nil {
			t.Errorf("Delete %s: %v", a, err)
		}
	}
	snap, err = s.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot after deleting the damaged records: %v", err)
	}
	if got, want := sortedKeys(snap.Records), append(good, sampleRecord(3).Address); !cmp.Equal(got, want) {
		t.Errorf("records after: %v, want %v", got, want)
	}
}

// The error says how to get out, naming the backup only when there is one,
// and following its advice works.
func TestDamagedFileFixNamesBackup(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	newState(t, path, sampleRecord(1))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()

	// No backup yet: this file was made by one write-set.
	if err := os.WriteFile(path, data[:2*page], 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path).Snapshot(ctx)
	if err == nil || !strings.Contains(err.Error(), "there is no backup") || !strings.Contains(err.Error(), "mv "+path+" "+path+".damaged") {
		t.Errorf("without a backup: %v", err)
	}

	// A second write-set backs the file up first.
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Open(path).Put(ctx, sampleRecord(2)); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, full[:2*page], 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path).Snapshot(ctx)
	restore := "mv " + path + " " + path + ".damaged && cp " + BackupPath(path) + " " + path
	if err == nil || !strings.Contains(err.Error(), restore) {
		t.Fatalf("with a backup: %v, want it to say %q", err, restore)
	}
	// Do as it says.
	if err := os.Rename(path, path+".damaged"); err != nil {
		t.Fatal(err)
	}
	backup, err := os.ReadFile(BackupPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, backup, 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := Open(path).Snapshot(ctx)
	if err != nil {
		t.Fatalf("after restoring the backup: %v", err)
	}
	if got := sortedKeys(snap.Records); !cmp.Equal(got, []string{sampleRecord(1).Address}) {
		t.Errorf("restored records: %v", got)
	}

	// A damaged record: forget it, or restore.
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSandboxes).Put([]byte("sandbox.bad"), []byte("{"))
	})
	_, err = Open(path).Snapshot(ctx)
	if err == nil || !strings.Contains(err.Error(), "sandboxer state rm sandbox.bad") || !strings.Contains(err.Error(), restore) {
		t.Errorf("damaged record: %v", err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
