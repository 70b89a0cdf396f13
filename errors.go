package sandboxer

import (
	"errors"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Error is a classified error; see api.Error.
type Error = api.Error

// Sentinels for errors.Is; the API client's errors match the same ones.
var (
	// ErrInvalid: a malformed address, key, ttl or extensions, or a
	// configuration with errors.
	ErrInvalid = api.ErrInvalid
	// ErrNotFound: no such block or instance.
	ErrNotFound = api.ErrNotFound
	// ErrNotAllowed: a service the project does not opt in, or a feature
	// off the allowlist.
	ErrNotAllowed = api.ErrNotAllowed
	// ErrBusy: another command holds the state or instance lock longer
	// than Options.LockTimeout.
	ErrBusy = api.ErrBusy
	// ErrConflict: the call does not fit the current state (a plan made
	// against state that changed since; extend of an expired instance).
	ErrConflict = api.ErrConflict
	// ErrEngineUnreachable: the Docker engine cannot be reached.
	ErrEngineUnreachable = api.ErrEngineUnreachable
	// ErrUnavailable: allowed, but the configured images cannot provide
	// a requested feature.
	ErrUnavailable = api.ErrUnavailable
)

// ConfigError is a configuration that did not decode; Diagnostics carry
// file:line:col for each problem. It matches ErrInvalid.
type ConfigError struct {
	Diagnostics hcl.Diagnostics
	// Files are the parsed files, for rendering snippets.
	Files map[string]*hcl.File
}

func (e *ConfigError) Error() string { return "configuration: " + e.Diagnostics.Error() }

// Is makes a configuration error an ErrInvalid.
func (e *ConfigError) Is(target error) bool { return target == api.ErrInvalid }

// classify turns the errors of the packages underneath into *Error where
// they have a code; others pass through unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return err
	}
	var oe *ondemand.Error
	if errors.As(err, &oe) {
		return &api.Error{Code: oe.Kind.Code(), Message: oe.Msg, Allowed: oe.Allowed, Err: err}
	}
	var ue *plan.UnprovidableError
	if errors.As(err, &ue) {
		return &api.Error{Code: api.CodeUnavailable, Message: err.Error(), Err: err}
	}
	var le *state.LockedError
	if errors.As(err, &le) {
		return &api.Error{Code: api.CodeBusy, Message: err.Error(), Err: err}
	}
	var se *state.StaleError
	if errors.As(err, &se) {
		return &api.Error{Code: api.CodeConflict, Message: err.Error(), Err: err}
	}
	if errors.Is(err, apply.ErrEngine) {
		return &api.Error{Code: api.CodeEngineUnreachable, Message: err.Error(), Err: err}
	}
	return err
}
