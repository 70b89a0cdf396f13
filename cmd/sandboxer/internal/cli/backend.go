package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
)

// EnvBackendURL chooses a PostgreSQL state backend, like --backend. The
// URL holds a password, so the environment is the place for it; it is
// never printed.
const EnvBackendURL = "SANDBOXER_BACKEND_URL"

// backends caches what every Store call of one process shares: the
// keyring (a passphrase is derived once, not per call) and the
// PostgreSQL pool.
type backends struct {
	mu      sync.Mutex
	keys    *state.Keyring
	keysErr error
	keysSet bool
	db      *pgstate.DB
	dbURL   string
	// decl is the configuration's backend block, read once (declSet).
	decl    *config.BackendDecl
	declErr error
	declSet bool
}

// choice is the state backend by the one resolution every command and
// the library use (sandboxer.ChooseBackend): --backend, else
// SANDBOXER_BACKEND_URL, else the configuration's backend block, else
// the state file; the flag and the variable win, as Terraform's
// -backend-config does. A backend block that changed since the state
// was last used is a *sandboxer.BackendChangedError.
func (f *Factory) choice() (sandboxer.BackendChoice, error) {
	return f.choiceWith(f.Global.State)
}

// choiceWith is choice with statePath as --state.
func (f *Factory) choiceWith(statePath string) (sandboxer.BackendChoice, error) {
	decl, err := f.configBackend()
	if err != nil && f.Global.Backend == "" && f.Getenv(EnvBackendURL) == "" {
		// A backend block that does not decode is not the state file
		// (nor recorded as the backend used).
		path := f.Path(statePath)
		if path == "" {
			path = filepath.Join(f.Dir(), ".sandboxer", "state.db")
		}
		return sandboxer.BackendChoice{StatePath: path, Source: "the backend block"}, err
	}
	return sandboxer.ChooseBackend(sandboxer.BackendInput{Dir: f.Dir(), Flag: f.Global.Backend,
		StatePath: statePath, Decl: decl, Getenv: f.Getenv})
}

// backendChoice is the chosen backend as --backend takes it: a
// postgres:// URL, or "" for the state file.
func (f *Factory) backendChoice() string {
	c, _ := f.choice()
	return c.URL
}

// backendSource says what chose the state backend, for show.
func (f *Factory) backendSource() string {
	c, _ := f.choice()
	return c.Source
}

// configBackend is the backend block of the configuration directory
// (nil when it declares none), read from its sandboxer block alone.
func (f *Factory) configBackend() (*config.BackendDecl, error) {
	f.backends.mu.Lock()
	defer f.backends.mu.Unlock()
	if !f.backends.declSet {
		decl, diags := config.ReadBackend(f.Dir())
		if diags.HasErrors() {
			f.backends.declErr = fmt.Errorf("the backend in the configuration: %w", diags)
		} else {
			f.backends.decl = decl
		}
		f.backends.declSet = true
	}
	return f.backends.decl, f.backends.declErr
}

// backendURL checks a backend choice: a postgres:// URL, or "" for the
// state file ("" or "file").
func backendURL(u string) (string, error) {
	if u == "" || u == "file" {
		return "", nil
	}
	if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		// Not echoed: it may hold a password.
		return "", errors.New("the state backend (--backend or " + EnvBackendURL + ") must be a postgres:// URL, or \"file\" for the state file")
	}
	return u, nil
}

// Keyring is the state key from SANDBOXER_STATE_KEY(_FILE) and the old
// key from SANDBOXER_STATE_OLD_KEY(_FILE), read once.
func (f *Factory) Keyring() (*state.Keyring, error) {
	f.backends.mu.Lock()
	defer f.backends.mu.Unlock()
	if !f.backends.keysSet {
		f.backends.keys, f.backends.keysErr = state.KeyringFromEnv(f.Getenv)
		f.backends.keysSet = true
	}
	return f.backends.keys, f.backends.keysErr
}

// Store opens the state chosen (choice). A bad choice or key, a backend
// block that does not decode or that changed since the state was last
// used makes every call of the returned backend fail with the reason.
func (f *Factory) Store() state.Backend {
	c, err := f.choice()
	if err != nil {
		return state.Failing(err)
	}
	b, err := f.openAt(c.URL, c.StatePath)
	if err != nil {
		return state.Failing(err)
	}
	return b
}

// OpenBackend opens the state at where (a postgres:// URL, "file" or ""
// for the state file, as --backend takes), with the factory's keyring.
func (f *Factory) OpenBackend(where string) (state.Backend, error) {
	return f.openAt(where, f.StatePath())
}

// openAt is OpenBackend with the state file at path.
func (f *Factory) openAt(where, path string) (state.Backend, error) {
	keys, err := f.Keyring()
	if err != nil {
		return nil, err
	}
	u, err := backendURL(where)
	if err != nil {
		return nil, err
	}
	if u == "" {
		return state.Open(path, state.WithKeyring(keys)), nil
	}
	return pgstate.Open(f.pgDB(u), keys), nil
}

func (f *Factory) pgDB(u string) *pgstate.DB {
	f.backends.mu.Lock()
	defer f.backends.mu.Unlock()
	if f.backends.db == nil || f.backends.dbURL != u {
		f.backends.db, f.backends.dbURL = pgstate.NewDB(u), u
	}
	return f.backends.db
}

// stateExists reports whether there may be a state to read: for the file
// whether it exists; a database is always asked.
func stateExists(b state.Backend) bool {
	if s, ok := b.(*state.Store); ok {
		_, err := os.Stat(s.Path())
		return err == nil
	}
	return true
}

// backupWhere says where the state as it was before a command is kept.
func backupWhere(b state.Backend) string {
	if s, ok := b.(*state.Store); ok {
		return state.BackupPath(s.Path())
	}
	return b.Describe() + " (table sandboxer_history)"
}
