package cli

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/pflag"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
)

// VarOptions are the --var and --var-file flags shared by the commands that
// evaluate configuration, kept in command-line order: like Terraform, a
// later flag wins whichever kind it is.
type VarOptions struct {
	Args []config.VarArg
}

func (v *VarOptions) bind(fs *pflag.FlagSet) {
	fs.Var(orderedVar{into: &v.Args}, "var", "set a variable: `NAME=VALUE` (repeatable)")
	fs.Var(orderedVar{into: &v.Args, file: true}, "var-file", "read variables from an HCL `FILE` (repeatable)")
}

// orderedVar appends each use of its flag to one shared, ordered list.
type orderedVar struct {
	into *[]config.VarArg
	file bool
}

func (o orderedVar) String() string { return "" }
func (o orderedVar) Type() string   { return "stringArray" }
func (o orderedVar) Set(s string) error {
	*o.into = append(*o.into, config.VarArg{File: o.file, Value: s})
	return nil
}

// input resolves var files against the configuration directory.
func (v VarOptions) input(f *Factory) config.Input {
	args := make([]config.VarArg, len(v.Args))
	for i, a := range v.Args {
		if a.File {
			a.Value = f.Path(a.Value)
		}
		args[i] = a
	}
	return config.Input{Args: args, Environ: f.Environ}
}

// loadConfig decodes the configuration directory. On error it renders the
// diagnostics to stderr and returns errReported.
func loadConfig(f *Factory, vars VarOptions) (*config.Config, error) {
	ctx, cancel := interruptContext(f)
	defer cancel()
	cfg, diags, err := loadInterruptible(ctx, f, vars.input(f))
	if err != nil {
		return nil, &ExitError{Code: 1, Err: err}
	}
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
