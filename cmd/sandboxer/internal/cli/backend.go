package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

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

// backendChoice is what --backend, else SANDBOXER_BACKEND_URL, else the
// configuration's backend block names: the flag and the variable win, as
// Terraform's -backend-config does. Every command opens its state
// through it.
func (f *Factory) backendChoice() string {
	if f.Global.Backend != "" {
		return f.Global.Backend
	}
	if u := f.Getenv(EnvBackendURL); u != "" {
		return u
	}
	if decl, _ := f.configBackend(); decl != nil {
		return decl.Where(f.Getenv)
	}
	return ""
}

// backendSource says what chose the state backend, for show.
func (f *Factory) backendSource() string {
	switch decl, _ := f.configBackend(); {
	case f.Global.Backend != "":
		return "--backend"
	case f.Getenv(EnvBackendURL) != "":
		return EnvBackendURL
	case f.Global.State != "":
		return "--state"
	case decl != nil:
		return fmt.Sprintf("the backend block at %s", decl.DeclRange)
	}
	return "the default"
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

// Store opens the state: the file (--state), or the PostgreSQL backend
// chosen by --backend or SANDBOXER_BACKEND_URL. A bad choice or key makes
// every call of the returned backend fail with the reason.
func (f *Factory) Store() state.Backend {
	where := f.backendChoice()
	if u, _ := backendURL(where); u != "" && f.Global.State != "" {
		return state.Failing(errors.New("--state names a state file, but a PostgreSQL backend is chosen (--backend or " + EnvBackendURL + "); use one of them"))
	}
	b, err := f.OpenBackend(where)
	if err != nil {
		return state.Failing(err)
	}
	return b
}

// OpenBackend opens the state at where (a postgres:// URL, "file" or ""
// for the state file, as --backend takes), with the factory's keyring.
func (f *Factory) OpenBackend(where string) (state.Backend, error) {
	keys, err := f.Keyring()
	if err != nil {
		return nil, err
	}
	u, err := backendURL(where)
	if err != nil {
		return nil, err
	}
	if _, err := f.configBackend(); err != nil && f.Global.Backend == "" && f.Getenv(EnvBackendURL) == "" {
		return nil, err // a backend block that does not decode is not the state file
	}
	if u == "" {
		return state.Open(f.StatePath(), state.WithKeyring(keys)), nil
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
