package api

import (
	"errors"
	"fmt"
)

// Code classifies a refused or failed call, the same way whether it came
// from the library or over HTTP.
type Code string

// The codes. Each has a sentinel error below for errors.Is.
const (
	CodeInvalid           Code = "invalid"            // malformed address, key, ttl, extensions, body
	CodeUnauthorized      Code = "unauthorized"       // missing or wrong bearer token
	CodeNotFound          Code = "not_found"          // no such block, route or instance
	CodeNotAllowed        Code = "not_allowed"        // service not opted in, feature off the allowlist
	CodeBusy              Code = "busy"               // another command holds the lock
	CodeConflict          Code = "conflict"           // the instance's state forbids the call (extend of an expired one)
	CodeEngineUnreachable Code = "engine_unreachable" // the Docker engine cannot be reached
	CodeTooLarge          Code = "too_large"          // body over MaxBody
	CodeUnavailable       Code = "unavailable"        // the images cannot provide a requested feature (422); serve cannot verify a ServiceAccount token now (503)
	CodeQuotaExceeded     Code = "quota_exceeded"     // the tenant's quota (instances, ttl, databases, snapshots) is used up
	CodeRateLimited       Code = "rate_limited"       // the tenant's requests per minute are used up (429, Retry-After)
	CodeInternal          Code = "internal"           // anything else
)

// Sentinels for errors.Is. Errors from the library (package sandboxer),
// from the on-demand broker and from the API client all match them.
var (
	ErrInvalid           = errors.New("invalid request")
	ErrUnauthorized      = errors.New("unauthorized")
	ErrNotFound          = errors.New("not found")
	ErrNotAllowed        = errors.New("not allowed")
	ErrBusy              = errors.New("busy: locked by another command")
	ErrConflict          = errors.New("conflict")
	ErrEngineUnreachable = errors.New("cannot reach the Docker engine")
	ErrUnavailable       = errors.New("the images cannot provide a requested feature")
	ErrQuotaExceeded     = errors.New("quota exceeded")
	ErrRateLimited       = errors.New("rate limited")
)

// Sentinel returns the sentinel error of a code, nil for codes without
// one (internal, too_large).
func (c Code) Sentinel() error {
	switch c {
	case CodeInvalid:
		return ErrInvalid
	case CodeUnauthorized:
		return ErrUnauthorized
	case CodeNotFound:
		return ErrNotFound
	case CodeNotAllowed:
		return ErrNotAllowed
	case CodeBusy:
		return ErrBusy
	case CodeConflict:
		return ErrConflict
	case CodeEngineUnreachable:
		return ErrEngineUnreachable
	case CodeUnavailable:
		return ErrUnavailable
	case CodeQuotaExceeded:
		return ErrQuotaExceeded
	case CodeRateLimited:
		return ErrRateLimited
	}
	return nil
}

// Error is a classified error: errors.As(err, &*api.Error) gives the code,
// message and allowlist; errors.Is(err, api.ErrNotFound) and friends test
// the code. Status is the HTTP status when the error came over the API.
type Error struct {
	Code    Code
	Message string
	Allowed []string
	Status  int
	// Err is the underlying error when there is one (library calls).
	Err error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("sandboxer API: %s (HTTP %d)", e.Message, e.Status)
	}
	return e.Message
}

// Is matches the code's sentinel.
func (e *Error) Is(target error) bool {
	s := e.Code.Sentinel()
	return s != nil && s == target
}

func (e *Error) Unwrap() error { return e.Err }
