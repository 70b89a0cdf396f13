package config

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// checkSchema and assertSchema are Terraform's check blocks:
//
//	check "no_replace_in_ci" {
//	  assert {
//	    condition     = plan.replace == 0
//	    error_message = "CI must not replace a sandbox."
//	  }
//	}
var (
	checkSchema  = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "assert"}}}
	assertSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true}, {Name: "error_message", Required: true}}}
)

// Check is a check block: assertions over the plan and the sandboxes,
// evaluated once a plan is made (EvalChecks), never while loading.
type Check struct {
	Name      string
	Asserts   []*Assert
	DeclRange hcl.Range
}

// Assert is one assert block, its expressions kept unevaluated.
type Assert struct {
	Condition    hcl.Expression
	ErrorMessage hcl.Expression
}

// decodeChecks decodes the check blocks into Config.Checks.
func (l *loader) decodeChecks(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]hcl.Range{}
	for _, b := range blocks {
		name := b.Labels[0]
		if !validName(name) {
			diags = append(diags, invalidNameDiag("check", name, b.LabelRanges[0]))
			continue
		}
		if prev, ok := seen[name]; ok {
			diags = append(diags, duplicateDiag("check", name, prev, b.DefRange))
			continue
		}
		seen[name] = b.DefRange
		content, d := b.Body.Content(checkSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		c := &Check{Name: name, DeclRange: b.DefRange}
		for _, ab := range content.Blocks {
			ac, d := ab.Body.Content(assertSchema)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			c.Asserts = append(c.Asserts, &Assert{Condition: ac.Attributes["condition"].Expr, ErrorMessage: ac.Attributes["error_message"].Expr})
		}
		if len(c.Asserts) == 0 {
			diags = append(diags, errorDiag("Check without assertions", fmt.Sprintf("check %q needs at least one assert block.", name), b.DefRange))
			continue
		}
		l.cfg.Checks = append(l.cfg.Checks, c)
	}
	return diags
}

// EvalChecks evaluates every check block's assertions with var, local,
// project and the functions, plus sandbox and plan as the caller gives
// them (the plan's values: plan.CheckValues). A failed assertion, or one
// that cannot be evaluated, is a warning located at its condition, or an
// error when asErrors (plan --fail-on-check).
func (c *Config) EvalChecks(sandbox, planValue cty.Value, asErrors bool) hcl.Diagnostics {
	if len(c.Checks) == 0 {
		return nil
	}
	severity := hcl.DiagWarning
	if asErrors {
		severity = hcl.DiagError
	}
	ev := newEvaluator(context.Background(), c)
	for name := range c.Locals {
		ev.localNames[name] = true
	}
	ev.settle()
	var diags hcl.Diagnostics
	for _, chk := range c.Checks {
		for _, a := range chk.Asserts {
			ctx := ev.base(baseKey{locals: true, projects: true}, a.Condition).NewChild()
			ctx.Functions = ev.funcs
			ctx.Variables = map[string]cty.Value{"sandbox": sandbox, "plan": planValue}
			rng := a.Condition.Range()
			fail := func(summary, detail string) {
				diags = append(diags, &hcl.Diagnostic{Severity: severity, Summary: summary, Detail: detail, Subject: rng.Ptr()})
			}
			v, d := a.Condition.Value(ctx)
			if d.HasErrors() {
				fail("Check block assertion could not be evaluated", fmt.Sprintf("check %q: %s", chk.Name, d.Error()))
				continue
			}
			v, err := convert.Convert(v, cty.Bool)
			if err != nil || v.IsNull() || !v.IsKnown() {
				fail("Invalid check condition", fmt.Sprintf("check %q: the condition must be true or false.", chk.Name))
				continue
			}
			if v.True() {
				continue
			}
			msg := "the assertion failed"
			if m, d := a.ErrorMessage.Value(ctx); !d.HasErrors() {
				if s, err := convert.Convert(m, cty.String); err == nil && !s.IsNull() && s.IsKnown() {
					msg = s.AsString()
				}
			}
			fail("Check block assertion failed", fmt.Sprintf("check %q: %s", chk.Name, msg))
		}
	}
	return diags
}
