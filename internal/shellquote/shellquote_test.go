package shellquote

import (
	"os/exec"
	"testing"
)

// Each quoted word reaches a real sh as it was.
func TestQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "with space", "it's", `a"b`, "$HOME `x` $(y)", "line\nbreak", `back\slash`, "'''"} {
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("sh -c printf %s: %v", Quote(s), err)
		}
		if string(out) != s {
			t.Errorf("Quote(%q) reached sh as %q", s, out)
		}
	}
}
