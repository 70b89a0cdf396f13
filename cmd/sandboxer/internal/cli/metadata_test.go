package cli

import (
	"testing"

	"github.com/spf13/cobra"
)

// Every command explains itself (Long) and shows how it is used
// (Example); every command that prints results can print them as JSON.
// apply and destroy print a plan and progress, not results: their
// machine-readable form is plan --json / show --json PLANFILE and state
// list --json. fmt prints file names; init writes a file; serve logs
// (--log-format json); pool only groups its subcommands; mcp speaks
// JSON-RPC on stdout; completion prints a script.
func TestCommandMetadata(t *testing.T) {
	noJSON := map[string]bool{
		"sandboxer": true, "sandboxer apply": true, "sandboxer destroy": true, "sandboxer fmt": true,
		"sandboxer init": true, "sandboxer serve": true, "sandboxer state": true,
		"sandboxer mcp": true, "sandboxer database": true, "sandboxer pool": true,
	}
	root := NewRootCmd(&Factory{})
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		// cobra's own completion and help commands document themselves.
		if c.Name() == "completion" || c.Name() == "help" || c.Parent() != nil && c.Parent().Name() == "completion" {
			return
		}
		seen++
		if c.Long == "" {
			t.Errorf("%s has no Long description", path)
		}
		if c.Example == "" {
			t.Errorf("%s has no Example", path)
		}
		if !noJSON[path] && c.Flags().Lookup("json") == nil {
			t.Errorf("%s prints results but has no --json", path)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root.InitDefaultCompletionCmd()
	walk(root)
	if seen < 19 {
		t.Errorf("walked %d commands; the tree is smaller than expected", seen)
	}
}
