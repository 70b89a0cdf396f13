package config

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// CheckStatus is a check block's outcome, in Terraform's words (its
// plan JSON's checks[].status).
type CheckStatus string

const (
	CheckPass  CheckStatus = "pass"
	CheckFail  CheckStatus = "fail"
	CheckError CheckStatus = "error" // an assertion could not be evaluated
)

// CheckResult is one check block's outcome: Problems holds one
// diagnostic per assertion that failed or could not be evaluated, located
// at its condition.
type CheckResult struct {
	Check    *Check
	Status   CheckStatus
	Problems hcl.Diagnostics
}

// Message is the problem's own words: the assertion's error_message, or
// why it could not be evaluated.
func Message(d *hcl.Diagnostic) string {
	if m, ok := d.Extra.(assertionMessage); ok {
		return string(m)
	}
	return d.Detail
}

// assertionMessage rides on a diagnostic (Extra) so that Message can
// give the error_message without the "check \"x\": " prefix.
type assertionMessage string

// RunChecks evaluates every check block's assertions (EvalAssertions)
// with sandbox and plan as the caller gives them (the plan's values:
// plan.CheckValues). Problems are warnings, or errors when asErrors
// (plan --fail-on-check).
func (c *Config) RunChecks(sandbox, planValue cty.Value, asErrors bool) []CheckResult {
	severity := hcl.DiagWarning
	if asErrors {
		severity = hcl.DiagError
	}
	vars := map[string]cty.Value{"sandbox": sandbox, "plan": planValue}
	results := make([]CheckResult, 0, len(c.Checks))
	for _, chk := range c.Checks {
		r := CheckResult{Check: chk, Status: CheckPass}
		var errored bool
		r.Problems, errored = c.EvalAssertions(Assertions{Kind: "check", Name: chk.Name, Asserts: chk.Asserts, Severity: severity}, vars)
		switch {
		case errored:
			r.Status = CheckError
		case len(r.Problems) > 0:
			r.Status = CheckFail
		}
		results = append(results, r)
	}
	return results
}

// EvalChecks is RunChecks' problems, in check block order: a failed
// assertion, or one that cannot be evaluated, is a warning located at its
// condition, or an error when asErrors.
func (c *Config) EvalChecks(sandbox, planValue cty.Value, asErrors bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, r := range c.RunChecks(sandbox, planValue, asErrors) {
		diags = append(diags, r.Problems...)
	}
	return diags
}

// Assertions are assert blocks of one owner: a check block (Kind
// "check") or a run block of a test file (Kind "run").
type Assertions struct {
	Kind, Name string
	Asserts    []*Assert
	Severity   hcl.DiagnosticSeverity
}

// EvalAssertions is the one evaluator of assert blocks, for check blocks
// and the run blocks of `sandboxer test` alike: each condition sees var,
// local, project and the functions, plus vars (sandbox and plan, and for
// a test run output and run). It returns a diagnostic of a.Severity per
// assertion that failed (its error_message as the detail) or could not
// be evaluated (errored then reports true), located at the condition.
func (c *Config) EvalAssertions(a Assertions, vars map[string]cty.Value) (problems hcl.Diagnostics, errored bool) {
	if len(a.Asserts) == 0 {
		return nil, false
	}
	what := "Check block assertion"
	if a.Kind == "run" {
		what = "Test assertion"
	}
	ev := newEvaluator(context.Background(), c)
	for name := range c.Locals {
		ev.localNames[name] = true
	}
	ev.settle()
	for _, as := range a.Asserts {
		ctx := ev.base(baseKey{locals: true, projects: true}, as.Condition).NewChild()
		ctx.Functions = ev.funcs
		ctx.Variables = vars
		rng := as.Condition.Range()
		fail := func(summary, msg string) {
			problems = append(problems, &hcl.Diagnostic{Severity: a.Severity, Summary: summary,
				Detail: fmt.Sprintf("%s %q: %s", a.Kind, a.Name, msg), Subject: rng.Ptr(), Extra: assertionMessage(msg)})
		}
		v, d := as.Condition.Value(ctx)
		if d.HasErrors() {
			errored = true
			first := d.Errs()[0]
			var de *hcl.Diagnostic
			msg := first.Error()
			if errors.As(first, &de) {
				msg = strings.TrimSuffix(de.Summary+": "+de.Detail, ".") + "."
			}
			fail(what+" could not be evaluated", msg)
			continue
		}
		v, err := convert.Convert(v, cty.Bool)
		if err != nil || v.IsNull() || !v.IsKnown() {
			errored = true
			fail("Invalid "+a.Kind+" condition", "the condition must be true or false.")
			continue
		}
		if v.True() {
			continue
		}
		msg := "the assertion failed"
		if m, d := as.ErrorMessage.Value(ctx); !d.HasErrors() {
			if s, err := convert.Convert(m, cty.String); err == nil && !s.IsNull() && s.IsKnown() {
				msg = s.AsString()
			}
		}
		fail(what+" failed", msg)
	}
	return problems, errored
}
