package docker

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/sandboxer/sandboxer/state"
)

// User and database names inside every sandbox. The admin is sandboxer's
// own; only the app user is handed out.
const (
	appUser     = "app"
	appDatabase = "app"
	adminUser   = "sbx_admin"
)

// redacted replaces secret values wherever they would otherwise be shown.
const redacted = "(sensitive)"

// newPassword returns 192 random bits, URL-safe (A-Z a-z 0-9 - _), so it can
// go into a URL, a shell line, an ACL file or a SQL literal unquoted.
func newPassword() (state.Secret, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return state.Secret(base64.RawURLEncoding.EncodeToString(b)), nil
}

// scrubber removes known secret values from text.
type scrubber struct {
	secrets []string
}

func (s *scrubber) add(secrets ...state.Secret) {
	for _, v := range secrets {
		if v != "" {
			s.secrets = append(s.secrets, v.Reveal())
		}
	}
}

// text returns t with every known secret replaced by "(sensitive)".
func (s *scrubber) text(t string) string {
	for _, v := range s.secrets {
		t = strings.ReplaceAll(t, v, redacted)
	}
	return t
}

// err returns err with a scrubbed message. Errors this package builds never
// hold a secret; this is the second line of defence for text that comes from
// outside (engine messages, server replies, container logs). The original
// stays reachable through Unwrap so errors.Is(err, apply.ErrNotFound) and
// context errors keep working.
func (s *scrubber) err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := s.text(msg)
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
