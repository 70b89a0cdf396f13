package config

import (
	"context"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Limits on what evaluating a configuration may build. A configuration is
// code the CLI runs, and a few lines can ask for exponential work
// (forty chained concat(local.x, local.x) double a list forty times). The
// limits sit far above real use — a 100,000-key for_each fits many times
// over — and a configuration that reaches one gets an error at the
// expression that crossed it, instead of the process running out of memory.
const (
	// MaxValueElements bounds the elements (counted through nesting) of any
	// value a function returns or a local, for_each or argument holds.
	MaxValueElements = 1_000_000
	// MaxValueBytes bounds the string bytes (counted through nesting) of
	// any such value.
	MaxValueBytes = 16 << 20
	// MaxEvalElements and MaxEvalBytes bound what all function calls of one
	// load take and return together, so a loop of calls each under the
	// per-value limits still ends.
	MaxEvalElements = 10_000_000
	MaxEvalBytes    = 256 << 20
)

// size is how big a value is: its elements and its string bytes, each
// counted through nesting and through shared parts (a tuple holding the
// same list twice counts it twice, as anything walking it would).
type size struct{ elems, bytes int64 }

func (s size) add(o size) size { return size{s.elems + o.elems, s.bytes + o.bytes} }

// over reports which per-value limit s exceeds, or "".
func (s size) over() string {
	switch {
	case s.elems > MaxValueElements:
		return fmt.Sprintf("more than %d elements (the limit for one value)", MaxValueElements)
	case s.bytes > MaxValueBytes:
		return fmt.Sprintf("more than %d MiB of strings (the limit for one value)", MaxValueBytes>>20)
	}
	return ""
}

// measure sizes v, stopping as soon as it is over the per-value limits so
// that measuring a huge value costs no more than the limit.
func measure(v cty.Value) size {
	var s size
	measureInto(v, &s)
	return s
}

func measureInto(v cty.Value, s *size) {
	if s.over() != "" {
		return
	}
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		s.bytes += int64(len(v.AsString()))
	case ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next() && s.over() == ""; {
			_, ev := it.Element()
			s.elems++
			measureInto(ev, s)
		}
	}
}

// meter carries the context and the running total of one load's function
// calls. Every function in the table goes through it, so evaluation stops
// at the first call after cancellation and at the limits.
type meter struct {
	ctx  context.Context
	used size
	// loops is how many iterations the for expressions evaluated so far
	// were bounded to (loopwork.go).
	loops int64
}

// limitError is the error a function call reports at a limit; hcl turns it
// into a diagnostic at the call ("Error in function call").
func limitError(what string) error {
	return fmt.Errorf("the result would have %s; configurations are limited so that evaluating them cannot exhaust memory", what)
}

// wrap returns f metered: cancellation is checked before the call, the
// result's size is estimated before it is built where it can outgrow the
// arguments, and measured after.
func (m *meter) wrap(name string, f function.Function) function.Function {
	params := f.Params()
	for i := range params {
		params[i].Type = looseParam(params[i].Type)
	}
	var varParam *function.Parameter
	if vp := f.VarParam(); vp != nil {
		p := *vp
		p.Type = looseParam(p.Type)
		varParam = &p
	}
	prepare := func(args []cty.Value) []cty.Value {
		out := make([]cty.Value, len(args))
		for i, a := range args {
			p := varParam
			if i < len(f.Params()) {
				p = &f.Params()[i]
			}
			out[i] = a
			if p != nil {
				if cv, ok := toCollection(a, p.Type); ok {
					out[i] = cv
				}
			}
		}
		return out
	}
	// call is f, except that a to-function whose argument converts
	// quickly returns the conversion: calling it would convert again.
	want, isTo := convertsTo(name)
	call := func(args []cty.Value) (cty.Value, error) {
		if isTo && len(args) == 1 {
			if cv, ok := toCollection(args[0], want); ok {
				return cv, nil
			}
		}
		return f.Call(prepare(args))
	}
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      params,
		VarParam:    varParam,
		Type: func(args []cty.Value) (cty.Type, error) {
			if isTo && len(args) == 1 {
				if ty, ok := collectionType(args[0], want); ok {
					return ty, nil
				}
			}
			return f.ReturnTypeForValues(prepare(args))
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if err := m.ctx.Err(); err != nil {
				return cty.DynamicVal, fmt.Errorf("evaluation stopped: %w", err)
			}
			// cty walks every argument (for marks, for conversion) on
			// each call, so a call in a loop over a big value is work in
			// proportion to the arguments even when its result is small.
			for _, a := range args {
				m.used = m.used.add(measure(a))
			}
			// Checked before the call: hcl goes on looping after a call
			// fails, and each later call would otherwise still run.
			if m.used.elems > MaxEvalElements || m.used.bytes > MaxEvalBytes {
				return cty.DynamicVal, fmt.Errorf("the function calls of this configuration have together taken and built more than %d elements or %d MiB of strings; configurations are limited so that evaluating them cannot exhaust memory or run for hours", MaxEvalElements, MaxEvalBytes>>20)
			}
			if est, ok := estimate(name, args); ok {
				if what := est.over(); what != "" {
					return cty.DynamicVal, limitError(what)
				}
			}
			v, err := call(args)
			if err != nil {
				return v, err
			}
			measured := v
			if isTo && len(args) == 1 {
				// A conversion is no bigger than its argument, which is
				// cheaper to walk: iterating a set sorts it.
				measured = args[0]
			}
			s := measure(measured)
			if what := s.over(); what != "" {
				return cty.DynamicVal, limitError(what)
			}
			m.used = m.used.add(s)
			if m.used.elems > MaxEvalElements || m.used.bytes > MaxEvalBytes {
				return cty.DynamicVal, fmt.Errorf("the function calls of this configuration have together taken and built more than %d elements or %d MiB of strings; configurations are limited so that evaluating them cannot exhaust memory or run for hours", MaxEvalElements, MaxEvalBytes>>20)
			}
			return v, nil
		},
	})
}

// looseParam widens a list, set or map of any element type to any type,
// so that hcl does not convert the argument itself: go-cty unifies a
// tuple's element types pairwise, which made toset of 100,000 strings take
// minutes. toCollection converts it instead, in linear time.
func looseParam(ty cty.Type) cty.Type {
	if isDynamicCollection(ty) {
		return cty.DynamicPseudoType
	}
	return ty
}

func isDynamicCollection(ty cty.Type) bool {
	return ty.IsCollectionType() && ty.ElementType() == cty.DynamicPseudoType
}

// estimate bounds the size of what a growing function would return, from
// its arguments, so that an oversized result is refused before it is
// built. ok is false for functions whose result is never larger than
// their arguments: measuring it afterwards is enough.
func estimate(name string, args []cty.Value) (size, bool) {
	switch name {
	case "concat", "merge", "setunion", "flatten", "join", "replace", "format", "formatlist":
	default:
		return estimateMore(name, args)
	}
	var total size
	for _, a := range args {
		total = total.add(measure(a))
	}
	switch name {
	case "concat", "merge", "setunion", "flatten":
		return total, true
	case "join":
		if len(args) > 0 && isKnownString(args[0]) {
			total.bytes += total.elems * int64(len(args[0].AsString()))
		}
		return total, true
	case "replace":
		if len(args) == 3 && isKnownString(args[0]) && isKnownString(args[1]) && isKnownString(args[2]) {
			s, sub, repl := len(args[0].AsString()), len(args[1].AsString()), len(args[2].AsString())
			return size{bytes: int64(s) + int64(s/max(sub, 1)+1)*int64(repl)}, true
		}
		return total, true
	case "format", "formatlist":
		if len(args) == 0 || !isKnownString(args[0]) {
			return total, true
		}
		format := args[0].AsString()
		verbs := int64(strings.Count(format, "%"))
		var widest int64 // the longest string any verb could print
		var rows int64 = 1
		for _, a := range args[1:] {
			s := measure(a)
			widest = max(widest, s.bytes)
			if name == "formatlist" && (a.Type().IsListType() || a.Type().IsTupleType()) && a.IsKnown() && !a.IsNull() {
				rows = max(rows, int64(a.LengthInt()))
			}
		}
		perRow := int64(len(format)) + verbs*(widest+maxFormatWidth+32)
		return size{elems: rows, bytes: rows * perRow}, true
	}
	return size{}, false
}

func isKnownString(v cty.Value) bool {
	v, _ = v.Unmark()
	return v.IsKnown() && !v.IsNull() && v.Type() == cty.String
}
