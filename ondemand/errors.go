package ondemand

import (
	"fmt"

	"github.com/sandboxer/sandboxer/api"
)

// Kind classifies a refused call, so the CLI and the HTTP API can answer
// alike (exit 1 with the message; 400/404/409/422).
type Kind int

const (
	// Invalid input: a malformed address, key, ttl or extensions map.
	Invalid Kind = iota + 1
	// NotFound: no such on-demand block, or (extend) no such instance.
	NotFound
	// NotAllowed: a service the project does not opt in, or a feature
	// outside the allowlist.
	NotAllowed
	// Busy: another command holds the instance longer than we waited.
	Busy
	// Conflict: the instance is in a state that forbids the call (extend
	// of an expired instance).
	Conflict
	// Unavailable: the images cannot provide a requested feature (Err is
	// the *plan.UnprovidableError listing them).
	Unavailable
	// QuotaExceeded: the tenant's quota forbids it (Msg names the limit
	// and the current use).
	QuotaExceeded
)

// Error is a refused call. Nothing was provisioned or changed.
type Error struct {
	Kind Kind
	Msg  string
	// Allowed is the allowlist (or opted-in set) that a NotAllowed error
	// was checked against.
	Allowed []string
	// Err is the underlying error, when there is one.
	Err error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// Code is the API's name for the kind.
func (k Kind) Code() api.Code {
	switch k {
	case Invalid:
		return api.CodeInvalid
	case NotFound:
		return api.CodeNotFound
	case NotAllowed:
		return api.CodeNotAllowed
	case Busy:
		return api.CodeBusy
	case Conflict:
		return api.CodeConflict
	case Unavailable:
		return api.CodeUnavailable
	case QuotaExceeded:
		return api.CodeQuotaExceeded
	}
	return api.CodeInvalid
}

// Is lets callers test the kind with errors.Is(err, api.ErrNotFound).
func (e *Error) Is(target error) bool {
	s := e.Kind.Code().Sentinel()
	return s != nil && s == target
}

func refuse(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}
