package sandboxer

import (
	"errors"
	"os"
	"strings"

	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
)

// EnvBackendURL chooses a PostgreSQL state (a postgres:// URL) instead of
// the state file, for the library as for the CLI. The URL holds a
// password: it is never printed.
const EnvBackendURL = "SANDBOXER_BACKEND_URL"

// defaultBackend is the state when Options.Backend is nil: PostgreSQL when
// SANDBOXER_BACKEND_URL is set in environ (nil: the process's), else the
// file at statePath; secrets sealed with the key state.KeyringFromEnv
// reads, so the library and the CLI seal and open one state alike. A bad
// URL or key gives a backend that fails every call with the reason.
func defaultBackend(statePath string, environ []string) state.Backend {
	getenv := os.Getenv
	if environ != nil {
		getenv = func(k string) string { return lookupEnv(environ, k) }
	}
	keys, err := state.KeyringFromEnv(getenv)
	if err != nil {
		return state.Failing(err)
	}
	switch u := getenv(EnvBackendURL); {
	case u == "" || u == "file":
		return state.Open(statePath, state.WithKeyring(keys))
	case strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://"):
		return pgstate.OpenURL(u, keys)
	default:
		return state.Failing(errors.New(EnvBackendURL + " must be a postgres:// URL, or \"file\" for the state file"))
	}
}

// lookupEnv reads name from a KEY=VALUE list, the last one winning.
func lookupEnv(environ []string, name string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
			return v
		}
	}
	return ""
}
