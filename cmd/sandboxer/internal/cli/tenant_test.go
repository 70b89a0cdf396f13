package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

// --tenant, else SANDBOXER_TENANT, makes the command's calls act for the
// tenant; serve refuses the flag; a bad name is refused.
func TestActAsTenant(t *testing.T) {
	for _, c := range []struct {
		name, flag, env, want, err string
	}{
		{name: "request", want: ""},
		{name: "request", env: "acme", want: "acme"},
		{name: "request", flag: "beta", env: "acme", want: "beta"},
		{name: "request", flag: "Acme.x", err: "a tenant name is"},
		{name: "serve", flag: "acme", err: "serve acts for the tenant of each token"},
		{name: "serve", env: "acme", want: ""},
	} {
		f := &Factory{hard: context.Background()}
		f.Global.Tenant = c.flag
		if c.env != "" {
			f.Environ = []string{"SANDBOXER_TENANT=" + c.env}
		}
		cmd := &cobra.Command{Use: c.name}
		cmd.SetContext(context.Background())
		err := actAsTenant(cmd, f)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: %v, want %q", c, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		got := ""
		if tn := sandboxer.TenantOf(f.hard); tn != nil {
			got = tn.Name
		}
		ctxGot := ""
		if tn := sandboxer.TenantOf(cmd.Context()); tn != nil {
			ctxGot = tn.Name
		}
		if got != c.want || ctxGot != c.want {
			t.Errorf("%+v: acts for %q (command context %q), want %q", c, got, ctxGot, c.want)
		}
	}
}
