package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// validate runs one validation rule of a variable against its final value.
// The rule may reference only the variable itself, as in Terraform, so a
// rule means the same whatever else the configuration holds.
func (l *loader) validate(d *variableDecl, val *validation) hcl.Diagnostics {
	var diags hcl.Diagnostics
	refs := append(val.condition.Variables(), val.errorMessage.Variables()...)
	for _, tr := range refs {
		if name, ok := refName(tr); ok && tr.RootName() == "var" && name == d.v.Name {
			continue
		}
		diags = append(diags, errorDiag("Invalid reference in variable validation",
			fmt.Sprintf("The validation rules of variable %q can refer only to the variable itself, as var.%s.", d.v.Name, d.v.Name),
			tr.SourceRange()))
	}
	if diags.HasErrors() {
		return diags
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{d.v.Name: d.v.Value})},
		Functions: l.ev.funcs,
	}
	cv, more := l.ev.meter.valueWithin(val.condition, ctx)
	diags = append(diags, more...)
	if more.HasErrors() {
		return diags
	}
	if cv.IsKnown() && cv.IsNull() {
		return append(diags, errorDiag("Invalid validation condition",
			"The condition evaluated to null; it must be true or false.", val.condition.Range()))
	}
	ok, usable, more := typed(cv, val.condition, cty.Bool, "condition")
	diags = append(diags, more...)
	if !usable || ok.True() {
		return diags
	}

	message := "The value does not satisfy the validation rule."
	mv, more := l.ev.meter.valueWithin(val.errorMessage, ctx)
	diags = append(diags, more...)
	if s, usable, more := typed(mv, val.errorMessage, cty.String, "error_message"); usable {
		message = s.AsString()
	} else {
		diags = append(diags, more...)
	}
	// Blame the value where it is written; a --var or environment value
	// has no source text, so blame the rule instead.
	subject := val.condition.Range()
	if d.source != nil {
		subject = *d.source
	}
	failed := errorDiag("Invalid value for variable",
		fmt.Sprintf("%s\n\nThis was checked by the validation rule at %s.", message, val.condition.Range()),
		subject)
	failed.Extra = validationFailure(d.v.Name)
	return append(diags, failed)
}

// validationFailure marks a diagnostic as a variable's validation rule
// failing (Extra), for a test run's expect_failures = [var.NAME].
type validationFailure string

// FailedVariable names the variable whose validation rule d reports, if
// it reports one.
func FailedVariable(d *hcl.Diagnostic) (string, bool) {
	name, ok := d.Extra.(validationFailure)
	return string(name), ok
}
