package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sandboxer/sandboxer/internal/redact"
)

// redactingT hands testscript a *testing.T whose log (a failed or verbose
// scenario's whole transcript: `sandboxer env` and `request` print
// passwords) has every generated password replaced: test output holds no
// secret, even of a throwaway sandbox.
type redactingT struct{ *testing.T }

func (t redactingT) Run(name string, f func(testscript.T)) {
	t.T.Run(name, func(t *testing.T) { f(redactingT{t}) })
}

func (t redactingT) Verbose() bool { return testing.Verbose() }

func (t redactingT) Log(args ...any) {
	t.T.Helper()
	t.T.Log(redactPasswords(fmt.Sprint(args...)))
}

func (t redactingT) Fatal(args ...any) {
	t.T.Helper()
	t.T.Fatal(redactPasswords(fmt.Sprint(args...)))
}

// runScripts is testscript.Run through redactingT.
func runScripts(t *testing.T, p testscript.Params) {
	if deadline, ok := t.Deadline(); ok && p.Deadline.IsZero() {
		p.Deadline = deadline
	}
	testscript.RunT(redactingT{t}, p)
}

// passwordLen is the length of redact.NewPassword's passwords: 24 random
// bytes, base64url without padding.
const passwordLen = 32

// redactPasswords replaces every word of text that has the form of a
// generated password: exactly passwordLen characters of the base64url
// alphabet between characters outside it, not all of them lower-case hex
// (a lineage, a hash: 32 hex digits; a random password is all hex with a
// probability of 4^-32).
func redactPasswords(text string) string {
	isAlpha := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		if !isAlpha(text[i]) {
			b.WriteByte(text[i])
			i++
			continue
		}
		j := i
		for j < len(text) && isAlpha(text[j]) {
			j++
		}
		if word := text[i:j]; len(word) == passwordLen && strings.Trim(word, "0123456789abcdef") != "" {
			b.WriteString(redact.Redacted)
		} else {
			b.WriteString(word)
		}
		i = j
	}
	return b.String()
}

func TestRedactPasswords(t *testing.T) {
	pw, err := redact.NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	secret := pw.Reveal()
	lineage := "0123456789abcdef0123456789abcdef"
	in := fmt.Sprintf("> exec sandboxer env\n[stdout]\nPGPASSWORD=%s\nDATABASE_URL=postgres://app:%s@127.0.0.1:5432/app\n{\"password\":%q}\nlineage %s\nsbx-f451b2a74c4c-agent-k0-970447-g1-postgres\n", secret, secret, secret, lineage)
	out := redactPasswords(in)
	if strings.Contains(out, secret) {
		t.Errorf("the password is still in:\n%s", out)
	}
	if n := strings.Count(out, redact.Redacted); n != 3 {
		t.Errorf("%d redactions, want 3:\n%s", n, out)
	}
	for _, keep := range []string{lineage, "sbx-f451b2a74c4c-agent-k0-970447-g1-postgres", "PGPASSWORD=", "postgres://app:", "@127.0.0.1:5432/app"} {
		if !strings.Contains(out, keep) {
			t.Errorf("%q was lost:\n%s", keep, out)
		}
	}
}
