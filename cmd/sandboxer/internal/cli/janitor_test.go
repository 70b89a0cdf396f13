package cli

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer"
)

// The serve janitor warns about a damaged record when it first sees it,
// not on every pass (once a minute), and again if it comes back.
func TestJanitorWarnsOncePerDamagedRecord(t *testing.T) {
	var buf bytes.Buffer
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: noTime}))
	bad := sandboxer.DamagedRecord{Address: "sandbox.bad", Err: errors.New("record is damaged; fix: sandboxer state rm sandbox.bad")}
	other := sandboxer.DamagedRecord{Address: "sandbox.new", Err: errors.New("newer schema")}
	passes := [][]sandboxer.DamagedRecord{{bad}, {bad}, {bad, other}, {}, {bad}}
	warned := map[string]bool{}
	for _, p := range passes {
		warned = warnDamaged(logger, p, warned)
	}
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=WARN msg="reap: left alone, its state record cannot be read" address=sandbox.bad error="record is damaged; fix: sandboxer state rm sandbox.bad"`,
		`level=WARN msg="reap: left alone, its state record cannot be read" address=sandbox.new error="newer schema"`,
		`level=WARN msg="reap: left alone, its state record cannot be read" address=sandbox.bad error="record is damaged; fix: sandboxer state rm sandbox.bad"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("janitor log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
