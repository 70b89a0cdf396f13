package kit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/state"
)

func TestCAFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	path, err := WriteCAFile(dir, "sbx-x-g1", []byte("pem"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || filepath.Base(path) != "sbx-x-g1.ca.pem" {
		t.Fatalf("CA file %s: %v", path, err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("CA directory mode %v", di.Mode().Perm())
	}
	if _, err := WriteCAFile("", "x", []byte("pem")); err == nil {
		t.Error("a CA file was written with no directory")
	}
	// Two services share one file: it is removed once, without an error
	// for the second.
	rec := &state.Record{Credentials: map[string]state.Credentials{"a": {CAFile: path}, "b": {CAFile: path}, "c": {}}}
	if err := RemoveCAFiles(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("CA file still there: %v", err)
	}
	if err := RemoveCAFiles(rec); err != nil {
		t.Errorf("removing a CA file already gone: %v", err)
	}
	other, err := WriteCAFile(dir, "sbx-y-g1", []byte("pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveCAFile(dir, "sbx-z-g1"); err != nil {
		t.Errorf("removing an orphan's absent CA file: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another instance's CA file went: %v", err)
	}
	if err := RemoveCAFile(dir, "sbx-y-g1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("orphan's CA file still there: %v", err)
	}
}
