package kubernetes

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/sandboxer/sandboxer/state"
)

// User and database names inside every sandbox, as on Docker. The admin
// is sandboxer's own; only the app user is handed out.
const (
	appUser     = "app"
	appDatabase = "app"
	adminUser   = "sbx_admin"
)

const redacted = "(sensitive)"

// newPassword returns 192 random bits, URL-safe, so it can go into a URL,
// an ACL file or a SQL literal unquoted.
func newPassword() (state.Secret, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return state.Secret(base64.RawURLEncoding.EncodeToString(b)), nil
}

// scrubber removes known secret values from text: the second line of
// defence for text that comes from outside (API messages, server replies,
// container logs). Errors this package builds never hold a secret.
type scrubber struct{ secrets []string }

func (s *scrubber) add(secrets ...state.Secret) {
	for _, v := range secrets {
		if v != "" {
			s.secrets = append(s.secrets, v.Reveal())
		}
	}
}

func (s *scrubber) text(t string) string {
	for _, v := range s.secrets {
		t = strings.ReplaceAll(t, v, redacted)
	}
	return t
}

// err returns err with a scrubbed message; the original stays reachable
// through Unwrap, so errors.Is keeps working.
func (s *scrubber) err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := s.text(msg); clean != msg {
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

func scrubRecord(rec *state.Record) *scrubber {
	var s scrubber
	for _, c := range rec.Credentials {
		s.add(c.Password, c.AdminPassword)
	}
	return &s
}
