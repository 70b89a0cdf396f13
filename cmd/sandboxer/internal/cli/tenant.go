package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

// actAsTenant makes every library call of the command act for --tenant
// (else SANDBOXER_TENANT): the same key rule and ownership as serve
// applies to that tenant's tokens, so a shared state used from the CLI
// keeps them. Quotas are serve's (its tenants file); the CLI has none.
// serve takes its tenants from --tenants and refuses --tenant.
func actAsTenant(cmd *cobra.Command, f *Factory) error {
	name := strings.TrimSpace(f.Global.Tenant)
	if name == "" {
		name = strings.TrimSpace(f.Getenv("SANDBOXER_TENANT"))
	}
	if name == "" {
		return nil
	}
	if cmd.Name() == "serve" {
		if f.Global.Tenant != "" {
			return fmt.Errorf("serve acts for the tenant of each token (--tenants FILE); --tenant is for a caller")
		}
		return nil // SANDBOXER_TENANT in serve's environment is a caller's setting
	}
	if !sandboxer.TenantNamePattern.MatchString(name) {
		return fmt.Errorf("--tenant %q: a tenant name is 1 to 24 lowercase letters, digits and '-', starting with a letter or digit", name)
	}
	t := &sandboxer.Tenant{Name: name}
	f.hard = sandboxer.WithTenant(f.hard, t)
	cmd.SetContext(sandboxer.WithTenant(cmd.Context(), t))
	return nil
}
