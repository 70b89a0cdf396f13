package redact

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/state"
)

func TestScrubberHidesEveryKnownSecret(t *testing.T) {
	pw, err := NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	if len(pw.Reveal()) != 32 || strings.ContainsAny(pw.Reveal(), "+/=") {
		t.Errorf("password %d characters, or not URL-safe", len(pw.Reveal()))
	}
	s := ForRecord(&state.Record{Credentials: map[string]state.Credentials{"postgres": {Password: pw, AdminPassword: "adm1n"}}})
	inner := fmt.Errorf("server said: auth %s / adm1n failed: %w", pw.Reveal(), context.Canceled)
	got := s.Err(inner)
	if strings.Contains(got.Error(), pw.Reveal()) || strings.Contains(got.Error(), "adm1n") || !strings.Contains(got.Error(), Redacted) {
		t.Errorf("scrubbed error %q", got)
	}
	if !errors.Is(got, context.Canceled) {
		t.Error("scrubbing lost the wrapped error")
	}
	if clean := errors.New("no secret here"); s.Err(clean) != clean {
		t.Error("an error without secrets was rewrapped")
	}
}

var errGone = errors.New("gone")

func TestScrubber(t *testing.T) {
	var s Scrubber
	s.Add("s3cret-A", "", "s3cret-B")
	base := errors.New("auth failed for s3cret-A with s3cret-B")
	err := s.Err(fmt.Errorf("wrapped: %w", fmt.Errorf("x: %w", errGone)))
	if !errors.Is(err, errGone) {
		t.Errorf("scrubbed error lost its chain: %v", err)
	}
	got := s.Err(base)
	if strings.Contains(got.Error(), "s3cret") {
		t.Errorf("secret survived scrubbing: %q", got)
	}
	if want := "auth failed for (sensitive) with (sensitive)"; got.Error() != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if s.Err(nil) != nil {
		t.Error("scrubbing nil gave an error")
	}
}

func TestNewPasswordIsRandomAndURLSafe(t *testing.T) {
	a, err := NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPassword()
	if a == b || len(a.Reveal()) != 32 {
		t.Errorf("passwords not fresh or wrong length: %d", len(a.Reveal()))
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString(a.Reveal()) {
		t.Error("password is not URL-safe")
	}
}
