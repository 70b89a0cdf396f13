// Package redact makes the secrets every runtime hands out and keeps them
// out of text that comes from outside (engine and API server messages,
// server replies, container logs): the second line of defence behind
// errors that are built without secrets in the first place. Both runtimes
// use it, so what a password looks like and how it is scrubbed is written
// once.
//
// What this package must never do: log, print, or return a secret in an
// error.
package redact

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/sandboxer/sandboxer/state"
)

// Redacted replaces secret values wherever they would otherwise be shown.
const Redacted = "(sensitive)"

// NewPassword returns 192 random bits, URL-safe (A-Z a-z 0-9 - _), so it
// can go into a URL, a shell line, an ACL file or a SQL literal unquoted.
func NewPassword() (state.Secret, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return state.Secret(base64.RawURLEncoding.EncodeToString(b)), nil
}

// Scrubber removes known secret values from text. The zero value knows
// none.
type Scrubber struct {
	secrets []string
}

// ForRecord knows every password of rec.
func ForRecord(rec *state.Record) *Scrubber {
	var s Scrubber
	for _, c := range rec.Credentials {
		s.Add(c.Password, c.AdminPassword)
	}
	return &s
}

// Add makes secrets known; empty ones are ignored.
func (s *Scrubber) Add(secrets ...state.Secret) {
	for _, v := range secrets {
		if v != "" {
			s.secrets = append(s.secrets, v.Reveal())
		}
	}
}

// Text returns t with every known secret replaced by Redacted.
func (s *Scrubber) Text(t string) string {
	for _, v := range s.secrets {
		t = strings.ReplaceAll(t, v, Redacted)
	}
	return t
}

// Err returns err with a scrubbed message. The original stays reachable
// through Unwrap, so errors.Is(err, apply.ErrNotFound) and context errors
// keep working.
func (s *Scrubber) Err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := s.Text(msg); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
