package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// marking is the type of cty marks this package puts on values.
type marking string

// sensitiveMark travels with a password or URL through any expression an
// output builds from it (interpolation, functions, whole objects), so an
// output that would print a secret can be required to say sensitive.
const sensitiveMark marking = "sensitive"

// checkSensitive refuses an output that carries a secret without
// `sensitive = true`, as Terraform does: otherwise apply would print it.
func checkSensitive(o *Output, v cty.Value) hcl.Diagnostics {
	if o.Sensitive || !v.ContainsMarked() {
		return nil
	}
	rng := o.Expr.Range()
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Output refers to sensitive values",
		Detail: fmt.Sprintf("Output %q includes a sandbox password or URL. Add sensitive = true to the output block: "+
			"it is then hidden in apply's output and shown only by `sandboxer output %s`, --raw or --json.", o.Name, o.Name),
		Subject: &rng,
	}}
}

// unmarked strips the marks before a value leaves the package.
func unmarked(v cty.Value) cty.Value {
	u, _ := v.UnmarkDeep()
	return u
}
