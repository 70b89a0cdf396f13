package state_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/statetest"
)

// boltState is a state file in a test's own folder.
type boltState struct{ path string }

func (s boltState) Open(t *testing.T, keys *state.Keyring) state.Backend {
	return state.Open(s.path, state.WithKeyring(keys))
}

// Dump is every file next to the state: the state, its backup, and any
// temporary or lock file.
func (s boltState) Dump(t *testing.T) []byte {
	t.Helper()
	var all []byte
	err := filepath.WalkDir(filepath.Dir(s.path), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		all = append(all, data...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func (s boltState) Reset(t *testing.T) {
	t.Helper()
	for _, p := range []string{s.path, state.BackupPath(s.path)} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

func TestConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) statetest.State {
		return boltState{path: filepath.Join(t.TempDir(), "state.db")}
	})
}
