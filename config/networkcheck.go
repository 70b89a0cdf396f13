package config

import (
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
)

// NetworkNames are the distinct user networks the configuration names, in
// the order first named.
func (c *Config) NetworkNames() []string {
	var names []string
	for _, r := range c.NetworkRefs {
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	return names
}

// UnknownNetworkDiagnostics reports, where each is named, every user
// network of the configuration that is in missing (what the engine lacks).
func (c *Config) UnknownNetworkDiagnostics(missing []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, r := range c.NetworkRefs {
		if slices.Contains(missing, r.Name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unknown network",
				Detail: fmt.Sprintf("The Docker engine has no network named %q. Create it first (docker network create %s) or remove it from networks; nothing was created.",
					r.Name, r.Name),
				Subject: r.Range.Ptr(),
			})
		}
	}
	return diags
}
