package cli

import (
	"os"
	"strings"
	"testing"
)

// docs/cli.md names every command, so the page cannot fall behind the
// command tree.
func TestDocsNameEveryCommand(t *testing.T) {
	page, err := os.ReadFile("../../../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	root := NewRootCmd(&Factory{})
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Hidden {
			continue
		}
		if !strings.Contains(string(page), "`"+c.CommandPath()) {
			t.Errorf("docs/cli.md does not name %s", c.CommandPath())
		}
	}
}
