package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// evaluator evaluates expressions against what has been decoded so far.
// Values that failed to decode are held as cty.DynamicVal, so one mistake
// does not cascade into errors in everything that references it.
type evaluator struct {
	cfg   *Config
	funcs map[string]function.Function
	// localNames holds every declared local, including those whose value
	// failed, so references to them are not reported as undeclared.
	localNames map[string]bool
}

func newEvaluator(cfg *Config) *evaluator {
	return &evaluator{cfg: cfg, funcs: functions(), localNames: map[string]bool{}}
}

// scope says which references an expression may make. var is always
// allowed; the rest depends on where the expression is.
type scope struct {
	locals    bool
	projects  bool
	sandboxes bool
	// each is the each object of one for_each instance; nil outside one.
	each *cty.Value
	// sandbox is the value of the sandbox object in outputs.
	sandbox cty.Value
}

// blockScope is the scope of sandbox arguments (each is added per
// instance): everything decoded before sandboxes.
func blockScope() scope { return scope{locals: true, projects: true} }

// outputScope is the scope of output values, with sandbox bound.
func outputScope(sandbox cty.Value) scope {
	return scope{locals: true, projects: true, sandboxes: true, sandbox: sandbox}
}

// eval checks expr's references and evaluates it. Expressions with bad
// references are not evaluated: the reference diagnostic says it better
// than hcl's "Unsupported attribute" would.
func (e *evaluator) eval(expr hcl.Expression, sc scope) (cty.Value, hcl.Diagnostics) {
	diags := e.checkRefs(expr, sc)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	v, more := expr.Value(e.ctx(sc))
	diags = append(diags, more...)
	if more.HasErrors() {
		return cty.DynamicVal, diags
	}
	return v, diags
}

// ctx builds the evaluation context for a scope.
func (e *evaluator) ctx(sc scope) *hcl.EvalContext {
	vars := make(map[string]cty.Value, len(e.cfg.Variables))
	for name, v := range e.cfg.Variables {
		vars[name] = v.Value
	}
	variables := map[string]cty.Value{"var": cty.ObjectVal(vars)}
	if sc.locals {
		variables["local"] = cty.ObjectVal(e.cfg.Locals)
	}
	if sc.projects {
		projects := make(map[string]cty.Value, len(e.cfg.Projects))
		for name, p := range e.cfg.Projects {
			projects[name] = projectObject(p)
		}
		variables["project"] = cty.ObjectVal(projects)
	}
	if sc.each != nil {
		variables["each"] = *sc.each
	}
	if sc.sandboxes {
		variables["sandbox"] = sc.sandbox
	}
	return &hcl.EvalContext{Variables: variables, Functions: e.funcs}
}

// projectObject is what project.NAME evaluates to.
func projectObject(p *Project) cty.Value {
	exts := make(map[string]cty.Value, len(p.Extensions))
	for svc, feats := range p.Extensions {
		exts[svc] = stringListVal(feats)
	}
	extVal := cty.MapValEmpty(cty.List(cty.String))
	if len(exts) > 0 {
		extVal = cty.MapVal(exts)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"name":       cty.StringVal(p.Name),
		"services":   stringListVal(p.Services),
		"extensions": extVal,
	})
}

func stringListVal(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = cty.StringVal(s)
	}
	return cty.ListVal(vals)
}
