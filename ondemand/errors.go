package ondemand

import "fmt"

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

func refuse(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}
