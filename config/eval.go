package config

import (
	"context"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// evaluator evaluates expressions against what has been decoded so far.
// Values that failed to decode are held as cty.DynamicVal, so one mistake
// does not cascade into errors in everything that references it.
type evaluator struct {
	cfg   *Config
	ctx   context.Context
	funcs map[string]function.Function
	meter *meter
	// localNames holds every declared local, including those whose value
	// failed, so references to them are not reported as undeclared.
	localNames map[string]bool
	// settled is set by settle once variables, locals and projects are
	// final; from then on shared holds the context each scope kind reads,
	// built once rather than for every expression (a sandbox block with
	// many instances would otherwise rebuild every project object for each
	// argument of each instance).
	settled bool
	shared  map[baseKey]*hcl.EvalContext
}

// baseKey is the part of a scope that selects a shared context.
type baseKey struct{ locals, projects bool }

// newEvaluator returns an evaluator whose function calls stop once ctx is
// done.
func newEvaluator(ctx context.Context, cfg *Config) *evaluator {
	m := &meter{ctx: ctx}
	return &evaluator{cfg: cfg, ctx: ctx, meter: m, funcs: functions(m, cfg.Dir), localNames: map[string]bool{}}
}

// settle declares that Config.Variables, Locals and Projects will not
// change any more, so the contexts built from them can be shared. Before
// it, each expression gets a fresh context: locals are evaluated one after
// another, each seeing those before it.
func (e *evaluator) settle() {
	e.settled = true
	e.shared = map[baseKey]*hcl.EvalContext{}
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
	if v, ok := literalValue(expr); ok {
		return v, nil // what hcl evaluates it to (literalvalue.go)
	}
	if isLiteral(expr) {
		// Nothing to check: what checkRefs and valueWithin would do,
		// less their walks (literal.go).
		var diags hcl.Diagnostics
		v, more := expr.Value(e.evalCtx(sc, expr))
		diags = append(diags, more...)
		if more.HasErrors() {
			return cty.DynamicVal, diags
		}
		return v, diags
	}
	diags := e.checkRefs(expr, sc)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	v, more := e.meter.valueWithin(expr, e.evalCtx(sc, expr))
	diags = append(diags, more...)
	if more.HasErrors() {
		return cty.DynamicVal, diags
	}
	return v, diags
}

// evalCtx returns the evaluation context for a scope: the shared part (var,
// local, project and the functions) with each and sandbox, which change
// from one expression to the next, in a child context.
func (e *evaluator) evalCtx(sc scope, expr hcl.Expression) *hcl.EvalContext {
	base := e.base(baseKey{locals: sc.locals, projects: sc.projects}, expr)
	if sc.each == nil && !sc.sandboxes {
		return base
	}
	child := base.NewChild()
	// hcl looks functions up through the parents, but suggests a name for
	// an unknown one only from the innermost context.
	child.Functions = e.funcs
	child.Variables = make(map[string]cty.Value, 2)
	if sc.each != nil {
		child.Variables["each"] = *sc.each
	}
	if sc.sandboxes {
		child.Variables["sandbox"] = sc.sandbox
	}
	return child
}

// base returns the context of var, and of local and project when the key
// asks for them: shared once settled. Before that each expression gets a
// fresh context holding only what it references: building every local
// into each local's context made n locals cost n² (10,000 took seconds).
func (e *evaluator) base(k baseKey, expr hcl.Expression) *hcl.EvalContext {
	if ctx, ok := e.shared[k]; ok {
		return ctx
	}
	var refs referenced
	if !e.settled {
		refs = references(expr)
	}
	variables := map[string]cty.Value{
		"var": cty.ObjectVal(pick(refs, "var", e.cfg.Variables, func(v *Variable) cty.Value { return v.Value })),
	}
	if k.locals {
		variables["local"] = cty.ObjectVal(pick(refs, "local", e.cfg.Locals, func(v cty.Value) cty.Value { return v }))
	}
	if k.projects {
		variables["project"] = cty.ObjectVal(pick(refs, "project", e.cfg.Projects, projectObject))
	}
	ctx := &hcl.EvalContext{Variables: variables, Functions: e.funcs}
	if e.settled {
		e.shared[k] = ctx
	}
	return ctx
}

// referenced is the set of names an expression references under each
// root; a root in all (referenced as a whole, or by a computed key) needs
// every name. The nil value references everything.
type referenced struct {
	names map[string]map[string]bool
	all   map[string]bool
}

func references(expr hcl.Expression) referenced {
	r := referenced{names: map[string]map[string]bool{}, all: map[string]bool{}}
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		name, ok := refName(tr)
		if !ok {
			r.all[root] = true
			continue
		}
		if r.names[root] == nil {
			r.names[root] = map[string]bool{}
		}
		r.names[root][name] = true
	}
	return r
}

// pick builds the object for one root from the declared values: all of
// them, or only those referenced, looked up by name so the cost follows
// the expression rather than the configuration.
func pick[T any](r referenced, root string, from map[string]T, val func(T) cty.Value) map[string]cty.Value {
	if r.names == nil || r.all[root] {
		out := make(map[string]cty.Value, len(from))
		for name, v := range from {
			out[name] = val(v)
		}
		return out
	}
	out := make(map[string]cty.Value, len(r.names[root]))
	for name := range r.names[root] {
		if v, ok := from[name]; ok {
			out[name] = val(v)
		}
	}
	return out
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
