package cli

import (
	"bytes"
	"errors"
	"log"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/ondemand"
)

// The serve janitor warns about a damaged record when it first sees it,
// not on every pass (once a minute), and again if it comes back.
func TestJanitorWarnsOncePerDamagedRecord(t *testing.T) {
	var buf bytes.Buffer
	logger := log.New(&buf, "", 0)
	bad := ondemand.Damaged{Address: "sandbox.bad", Err: errors.New("record is damaged; fix: sandboxer state rm sandbox.bad")}
	other := ondemand.Damaged{Address: "sandbox.new", Err: errors.New("newer schema")}
	passes := [][]ondemand.Damaged{{bad}, {bad}, {bad, other}, {}, {bad}}
	warned := map[string]bool{}
	for _, p := range passes {
		warned = warnDamaged(logger, p, warned)
	}
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		"reap: warning: sandbox.bad: left alone, its state record cannot be read: record is damaged; fix: sandboxer state rm sandbox.bad",
		"reap: warning: sandbox.new: left alone, its state record cannot be read: newer schema",
		"reap: warning: sandbox.bad: left alone, its state record cannot be read: record is damaged; fix: sandboxer state rm sandbox.bad",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("janitor log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
