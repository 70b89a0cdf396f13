package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// networkChecker is the provider's answer to "which of these user networks
// does the engine lack" (the docker provider has one).
type networkChecker interface {
	MissingNetworks(ctx context.Context, names []string) ([]string, error)
}

// checkNetworks reports every user network the configuration names and the
// engine lacks, as diagnostics at the place each is named, before anything
// is created. validate cannot: it has no engine to ask.
func checkNetworks(ctx context.Context, f *Factory, cfg *config.Config, prov apply.Provider) error {
	nc, ok := prov.(networkChecker)
	if !ok || len(cfg.NetworkRefs) == 0 {
		return nil
	}
	var names []string
	for _, r := range cfg.NetworkRefs {
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	missing, err := nc.MissingNetworks(ctx, names)
	if err != nil {
		return fmt.Errorf("check user networks: %w", err)
	}
	if len(missing) == 0 {
		return nil
	}
	var diags hcl.Diagnostics
	for _, r := range cfg.NetworkRefs {
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
	renderDiags(f, cfg, diags)
	return errReported
}

// CADir is where TLS sandboxes' CA files are written: ca/ beside the
// state file, absolute so handed-out paths work from any directory.
func (f *Factory) CADir() string {
	dir := filepath.Join(filepath.Dir(f.StatePath()), "ca")
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
