package cli

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/pflag"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/views"
)

// VarOptions are the --var and --var-file flags shared by the commands that
// evaluate configuration.
type VarOptions struct {
	Vars     []string
	VarFiles []string
}

func (v *VarOptions) bind(fs *pflag.FlagSet) {
	fs.StringArrayVar(&v.Vars, "var", nil, "set a variable: `NAME=VALUE` (repeatable)")
	fs.StringArrayVar(&v.VarFiles, "var-file", nil, "read variables from an HCL `FILE` (repeatable)")
}

// input resolves var files against the configuration directory.
func (v VarOptions) input(f *Factory) config.Input {
	files := make([]string, len(v.VarFiles))
	for i, p := range v.VarFiles {
		files[i] = f.Path(p)
	}
	return config.Input{Vars: v.Vars, VarFiles: files, Environ: f.Environ}
}

// loadConfig decodes the configuration directory. On error it renders the
// diagnostics to stderr and returns errReported.
func loadConfig(f *Factory, vars VarOptions) (*config.Config, error) {
	cfg, diags := config.Load(f.Dir(), vars.input(f), f.Catalog)
	if diags.HasErrors() {
		renderDiags(f, cfg, diags)
		return nil, errReported
	}
	if len(diags) > 0 { // warnings
		renderDiags(f, cfg, diags)
	}
	return cfg, nil
}

func renderDiags(f *Factory, cfg *config.Config, diags hcl.Diagnostics) {
	var files map[string]*hcl.File
	if cfg != nil {
		files = cfg.Files
	}
	renderDiagsFiles(f, files, diags)
}

func renderDiagsFiles(f *Factory, files map[string]*hcl.File, diags hcl.Diagnostics) {
	_ = views.Diagnostics(f.IO.Err, diags, files, f.ErrColor())
}
