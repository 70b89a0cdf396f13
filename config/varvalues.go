package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// EnvVarPrefix marks environment variables that set input variables.
const EnvVarPrefix = "SBX_VAR_"

// assignVariables applies values over the defaults in Terraform's order of
// precedence, lowest first: declaration defaults (already set), SBX_VAR_
// environment variables, then --var and --var-file in command-line order.
// A later source overrides an earlier one.
func (l *loader) assignVariables(decls map[string]*variableDecl) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, kv := range l.in.Environ {
		name, raw, ok := strings.Cut(kv, "=")
		name, isVar := strings.CutPrefix(name, EnvVarPrefix)
		if !ok || !isVar {
			continue
		}
		// As Terraform does with TF_VAR_, environment values for variables
		// this configuration does not declare are ignored: the environment
		// is shared with other configurations.
		if d, ok := decls[name]; ok {
			diags = append(diags, d.setRaw(raw, "the environment variable "+EnvVarPrefix+name, l.ev.meter)...)
		}
	}
	for _, arg := range l.varArgs() {
		if arg.File {
			diags = append(diags, l.assignVarFile(arg.Value, decls)...)
			continue
		}
		flag := arg.Value
		name, raw, ok := strings.Cut(flag, "=")
		if !ok || name == "" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid --var option",
				Detail:   fmt.Sprintf("The given --var option %s is not correctly specified. It must be a variable name and value separated by an equals sign, like --var key=value.", quote(flag)),
			})
			continue
		}
		d, ok := decls[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("A variable named %q was assigned with --var, but the configuration does not declare a variable of that name. To use this value, add a variable %q {} block.", name, name),
			})
			continue
		}
		diags = append(diags, d.setRaw(raw, "--var", l.ev.meter)...)
	}
	for _, v := range l.in.Values {
		d, ok := decls[v.Name]
		if !ok {
			diags = append(diags, errorDiag("Value for undeclared variable",
				fmt.Sprintf("The configuration does not declare a variable named %q. To use this value, add a variable %q {} block.", v.Name, v.Name), v.Range))
			continue
		}
		rng := v.Range
		diags = append(diags, d.setValue(v.Value, rng.Filename, &rng)...)
	}
	return diags
}

// varArgs lists --var and --var-file in the order they apply: the
// command line's own order when the caller kept it, else files first.
func (l *loader) varArgs() []VarArg {
	if len(l.in.Args) > 0 {
		return l.in.Args
	}
	args := make([]VarArg, 0, len(l.in.VarFiles)+len(l.in.Vars))
	for _, path := range l.in.VarFiles {
		args = append(args, VarArg{File: true, Value: path})
	}
	for _, v := range l.in.Vars {
		args = append(args, VarArg{Value: v})
	}
	return args
}

// assignVarFile applies one --var-file of name = value lines (HCL, or
// JSON when the name ends in .json). The parsed file joins Config.Files so
// its diagnostics render with snippets.
func (l *loader) assignVarFile(path string, decls map[string]*variableDecl) hcl.Diagnostics {
	src, err := os.ReadFile(path)
	if err != nil {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Failed to read variables file",
			Detail:   fmt.Sprintf("Cannot read --var-file %s: %s.", path, err),
		}}
	}
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(path, ".json") {
		f, diags = json.Parse(src, path)
	} else {
		f, diags = hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	}
	if f == nil || diags.HasErrors() {
		if f != nil {
			l.cfg.Files[path] = f
		}
		return diags
	}
	l.cfg.Files[path] = f
	attrs, more := f.Body.JustAttributes()
	diags = append(diags, more...)
	for _, a := range sortedAttributes(attrs) {
		d, ok := decls[a.Name]
		if !ok {
			// A warning, as in Terraform: var files are often shared
			// between configurations that declare different variables.
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("The configuration does not declare a variable named %q, so this value is ignored.", a.Name),
				Subject:  a.NameRange.Ptr(),
			})
			continue
		}
		v, more := l.ev.meter.valueWithin(a.Expr, nil)
		diags = append(diags, more...)
		if more.HasErrors() {
			d.failed, d.set, d.v.Value = true, true, cty.DynamicVal
			continue
		}
		rng := a.Expr.Range()
		diags = append(diags, d.setValue(v, "--var-file "+path, &rng)...)
	}
	return diags
}

// setRaw sets a value given as text on the command line or in the
// environment. As in Terraform, a string (or untyped) variable takes the
// text as is; any other type parses it as an HCL expression.
func (d *variableDecl) setRaw(raw, origin string, m *meter) hcl.Diagnostics {
	if d.typ.Equals(cty.String) || d.typ.Equals(cty.DynamicPseudoType) {
		return d.setValue(cty.StringVal(raw), origin, nil)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), fmt.Sprintf("<value for var.%s>", d.v.Name), hcl.InitialPos)
	if diags.HasErrors() {
		d.failed, d.set, d.v.Value = true, true, cty.DynamicVal
		return diags
	}
	v, diags := m.valueWithin(expr, nil)
	if diags.HasErrors() {
		d.failed, d.set, d.v.Value = true, true, cty.DynamicVal
		return diags
	}
	return d.setValue(v, origin, nil)
}

// finishVariable reports a required variable left without a value and runs
// the validation rules against a usable value.
func (l *loader) finishVariable(d *variableDecl) hcl.Diagnostics {
	if !d.set {
		return hcl.Diagnostics{errorDiag("No value for required variable",
			fmt.Sprintf("The input variable %q is not set and has no default. Set it with --var %s=..., a --var-file, or the environment variable %s%s.",
				d.v.Name, d.v.Name, EnvVarPrefix, d.v.Name), d.v.DeclRange)}
	}
	if d.failed {
		return nil
	}
	var diags hcl.Diagnostics
	for _, val := range d.validations {
		diags = append(diags, l.validate(d, val)...)
	}
	return diags
}

// convertValue converts v to a variable's type, with the path of the
// mismatch in the message.
func convertValue(v cty.Value, ty cty.Type) (cty.Value, error) {
	cv, err := convert.Convert(v, ty)
	if err != nil {
		var pe cty.PathError
		if errors.As(err, &pe) {
			return cty.NilVal, fmt.Errorf("%s%w", pathPrefix(pe.Path), err)
		}
		return cty.NilVal, err
	}
	return cv, nil
}
