package sandboxer

import (
	"errors"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/snapshot"
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

// The codes of Error, as api.Code.
const (
	CodeInvalid           = api.CodeInvalid
	CodeNotFound          = api.CodeNotFound
	CodeNotAllowed        = api.CodeNotAllowed
	CodeBusy              = api.CodeBusy
	CodeConflict          = api.CodeConflict
	CodeEngineUnreachable = api.CodeEngineUnreachable
	CodeUnavailable       = api.CodeUnavailable
	CodeQuotaExceeded     = api.CodeQuotaExceeded
	CodeRateLimited       = api.CodeRateLimited
	CodeInternal          = api.CodeInternal
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

// Classify gives err the code every front end answers with: the library
// returns it, the HTTP server turns the code into a status (and the API
// client back into the same *Error), the CLI into its exit code. Errors
// without a code come back as CodeInternal. It is the one classification
// of the packages underneath; nothing else maps their errors.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var ae *api.Error
	if errors.As(classify(err), &ae) {
		return ae
	}
	return &api.Error{Code: api.CodeInternal, Message: err.Error(), Err: err}
}

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
	code, allowed, msg := codeOf(err)
	if code == "" {
		return err
	}
	return &api.Error{Code: code, Message: msg, Allowed: allowed, Err: err}
}

// codeOf is the code of an error from a package underneath, "" for none.
func codeOf(err error) (code api.Code, allowed []string, msg string) {
	msg = err.Error()
	var (
		oe *ondemand.Error
		ue *plan.UnprovidableError
		ni *plan.NoImageError
		le *state.LockedError
		se *state.StaleError
		mf *snapshot.MissingFeatureError
		ce *snapshot.ChecksumError
		sm *apply.SeedMisfitError
		cf *ConfigError
	)
	switch {
	case errors.As(err, &oe):
		return oe.Kind.Code(), oe.Allowed, oe.Msg
	case errors.As(err, &cf):
		return api.CodeInvalid, nil, msg
	case errors.As(err, &ue), errors.As(err, &ni), errors.As(err, &mf), errors.As(err, &sm):
		return api.CodeUnavailable, nil, msg
	case errors.As(err, &le):
		return api.CodeBusy, nil, msg
	case errors.As(err, &se), errors.As(err, &ce), errors.Is(err, snapshot.ErrExists):
		return api.CodeConflict, nil, msg
	case errors.Is(err, snapshot.ErrNotFound), errors.Is(err, snapshot.ErrNotProvisioned):
		return api.CodeNotFound, nil, msg
	case errors.Is(err, apply.ErrEngine):
		return api.CodeEngineUnreachable, nil, msg
	case errors.Is(err, apply.ErrTransient):
		return api.CodeUnavailable, nil, msg
	}
	return "", nil, msg
}
