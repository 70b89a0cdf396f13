package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// MaxLoopIterations bounds the iterations the for expressions of one
// load make together, nesting multiplied out, with the elements the
// function calls inside them are given counted as iterations too. Function calls are
// metered as they run (limits.go), but a for expression runs inside hcl
// with no call of ours in its loop: three nested fors over a 3,000-element
// local ask for 27 billion iterations and would spin for hours. The bound
// is checked before evaluating, from the sizes of the collections the
// loops range over; a 100,000-key map walked a few times fits many times.
const MaxLoopIterations = 1_000_000

// loopWork estimates, before expr is evaluated in ctx, how many iterations
// its for expressions will make, and reports the for expression at which
// the running total crosses MaxLoopIterations.
// *used is the total so far, for every expression of one load.
func loopWork(expr hcl.Expression, ctx *hcl.EvalContext, used *int64) hcl.Diagnostics {
	node, ok := expr.(hclsyntax.Node)
	if !ok || !hasFor(node) {
		return nil
	}
	w := &loopWalker{ctx: ctx, bounds: map[string]int64{}, frames: []loopFrame{{mult: 1}}, total: *used}
	hclsyntax.Walk(node, w)
	*used = w.total
	return w.diags
}

// valueWithin evaluates expr in ctx (nil for a constant) once loopWork
// has found its loops within what is left of the load's budget; a nil
// meter gives expr a budget of its own.
func (m *meter) valueWithin(expr hcl.Expression, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var own int64
	used := &own
	if m != nil {
		used = &m.loops
	}
	if diags := loopWork(expr, ctx, used); diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	return expr.Value(ctx)
}

// loopWalker carries the running total and, for each iterator variable of
// the enclosing fors, a bound on the length of anything reachable from
// the values it takes.
type loopWalker struct {
	ctx    *hcl.EvalContext
	bounds map[string]int64
	frames []loopFrame
	total  int64
	diags  hcl.Diagnostics
	// skip is how many counted collections the walk is inside.
	skip int
}

// loopFrame is a for being walked (or the collection of one, which runs
// once per run of the enclosing loops, not once per element): what is
// inside it runs mult times.
type loopFrame struct {
	node  hclsyntax.Node
	mult  int64
	outer int64 // the enclosing multiplier, for the for's collection
	coll  hclsyntax.Node
	saved map[string]int64 // iterator bounds shadowed by this for; -1: none
	// counted: the fors inside coll were counted before coll was
	// evaluated for its length, so the walk does not count them again.
	counted bool
}

func (w *loopWalker) Enter(node hclsyntax.Node) hcl.Diagnostics {
	if w.diags.HasErrors() {
		return nil
	}
	top := w.frames[len(w.frames)-1]
	if top.coll != nil && node == top.coll {
		w.frames = append(w.frames, loopFrame{node: node, mult: top.outer, counted: top.counted})
		if top.counted {
			w.skip++
		}
		return nil
	}
	if w.skip > 0 {
		return nil
	}
	if call, ok := node.(*hclsyntax.FunctionCallExpr); ok && top.mult > 1 {
		w.countCall(call, top.mult)
		return nil
	}
	f, ok := node.(*hclsyntax.ForExpr)
	if !ok {
		return nil
	}
	// A for in the collection runs when the collection is evaluated for
	// its length, so it is counted first, on its own walk.
	counted := false
	if hasFor(f.CollExpr) {
		sub := &loopWalker{ctx: w.ctx, bounds: w.bounds, frames: []loopFrame{{mult: top.mult}}, total: w.total}
		hclsyntax.Walk(f.CollExpr, sub)
		w.total = sub.total
		if w.diags = append(w.diags, sub.diags...); w.diags.HasErrors() {
			return nil
		}
		counted = true
	}
	iters, reach := w.iterations(f.CollExpr)
	inner := saturatingMul(top.mult, iters)
	w.total = saturatingAdd(w.total, inner)
	if w.total > MaxLoopIterations {
		w.diags = append(w.diags, errorDiag("Configuration too expensive to evaluate",
			fmt.Sprintf("The for expressions of this configuration would make more than %d iterations together (this one ranges over up to %d elements, %d times); configurations are limited so that evaluating them cannot run for hours. Iterate over a smaller collection, or unnest the loops.", MaxLoopIterations, iters, top.mult),
			f.SrcRange))
		return nil
	}
	frame := loopFrame{node: node, mult: inner, outer: top.mult, coll: f.CollExpr, saved: map[string]int64{}, counted: counted}
	for _, name := range []string{f.KeyVar, f.ValVar} {
		if name == "" {
			continue
		}
		if _, done := frame.saved[name]; done {
			continue
		}
		if old, ok := w.bounds[name]; ok {
			frame.saved[name] = old
		} else {
			frame.saved[name] = -1
		}
		w.bounds[name] = reach
	}
	w.frames = append(w.frames, frame)
	return nil
}

func (w *loopWalker) Exit(node hclsyntax.Node) hcl.Diagnostics {
	top := w.frames[len(w.frames)-1]
	if len(w.frames) == 1 || top.node != node {
		return nil
	}
	w.frames = w.frames[:len(w.frames)-1]
	if top.counted && top.coll == nil {
		w.skip--
	}
	for name, old := range top.saved {
		if old < 0 {
			delete(w.bounds, name)
		} else {
			w.bounds[name] = old
		}
	}
	return nil
}

// countCall adds the work of a function call made mult times in a loop:
// cty walks every argument on every call, so a call over a big value in
// a big loop is refused here, before the loop runs, rather than metered
// call by call (hcl finishes a loop even after a call in it fails).
func (w *loopWalker) countCall(call *hclsyntax.FunctionCallExpr, mult int64) {
	var args int64
	for _, arg := range call.Args {
		for _, tr := range arg.Variables() {
			if b, ok := w.bounds[tr.RootName()]; ok {
				args = saturatingAdd(args, b)
				continue
			}
			if w.ctx == nil {
				continue
			}
			if v, diags := tr.TraverseAbs(w.ctx); !diags.HasErrors() {
				args = saturatingAdd(args, measure(v).elems)
			}
		}
	}
	w.total = saturatingAdd(w.total, saturatingMul(mult, args))
	if w.total > MaxLoopIterations {
		w.diags = append(w.diags, errorDiag("Configuration too expensive to evaluate",
			fmt.Sprintf("This call of %s runs %d times in a loop over arguments of up to %d elements, more than the %d steps a configuration may take in its for expressions; configurations are limited so that evaluating them cannot run for hours. Compute it once, outside the loop.", call.Name, mult, args, MaxLoopIterations),
			call.Range()))
	}
}

// hasFor reports whether a for expression is anywhere in node.
func hasFor(node hclsyntax.Node) bool {
	found := false
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if _, ok := n.(*hclsyntax.ForExpr); ok {
			found = true
		}
		return nil
	})
	return found
}

// iterations bounds how many times a for over coll runs, and how long
// anything reachable from one of its elements can be. A collection that
// mentions an enclosing iterator cannot be evaluated yet, so it is bounded
// by what each of its references can reach.
func (w *loopWalker) iterations(coll hclsyntax.Expression) (iters, reach int64) {
	dependent := false
	for _, tr := range coll.Variables() {
		if b, ok := w.bounds[tr.RootName()]; ok {
			dependent = true
			iters = max(iters, b)
			reach = max(reach, b)
		}
	}
	if !dependent {
		v, diags := coll.Value(w.ctx)
		if diags.HasErrors() {
			return 0, 0
		}
		return lengthAndReach(v)
	}
	// Never below 1: a collection built from an iterator's plain value
	// ([a], split(",", a)) still runs what is nested in it.
	iters, reach = max(iters, 1), max(reach, 1)
	for _, tr := range coll.Variables() {
		if _, ok := w.bounds[tr.RootName()]; ok {
			continue
		}
		if w.ctx == nil {
			continue
		}
		v, diags := tr.TraverseAbs(w.ctx)
		if diags.HasErrors() {
			continue
		}
		s := measure(v).elems
		iters = max(iters, s)
		reach = max(reach, s)
	}
	return iters, reach
}

// lengthAndReach returns v's length and the most elements any one of its
// elements holds through nesting.
func lengthAndReach(v cty.Value) (length, reach int64) {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return 0, 0
	}
	ty := v.Type()
	if !(ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType()) {
		return 0, 0
	}
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		length++
		reach = max(reach, measure(ev).elems)
	}
	return length, reach
}

func saturatingAdd(a, b int64) int64 {
	if a > (1<<62) || b > (1<<62) {
		return 1 << 62
	}
	return a + b
}

func saturatingMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}
