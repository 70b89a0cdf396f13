package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// eachItem is one for_each instance: its key and each.value.
type eachItem struct {
	key   string
	value cty.Value
}

// forEach evaluates a for_each argument. As in Terraform it must be a map
// (or object), whose keys name the instances, or a set of strings, whose
// elements are both key and value. A list is refused rather than keyed by
// index, so reordering it can never swap two sandboxes.
func (l *loader) forEach(expr hcl.Expression) ([]eachItem, hcl.Diagnostics) {
	if items, diags, ok := l.forEachStrings(expr); ok {
		return items, diags
	}
	v, diags := l.ev.eval(expr, blockScope())
	if diags.HasErrors() {
		return nil, diags
	}
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() {
		return nil, diags
	}
	invalid := func(detail string) ([]eachItem, hcl.Diagnostics) {
		return nil, append(diags, errorDiag("Invalid for_each argument", detail, expr.Range()))
	}
	if v.IsNull() {
		return invalid(`The given "for_each" argument value is null. A map, or set of strings, is allowed.`)
	}
	ty := v.Type()
	var items []eachItem
	switch {
	case ty.IsMapType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			items = append(items, eachItem{key: k.AsString(), value: ev})
		}
	case ty.IsSetType():
		// One pass over the set: iterating a cty set sorts it, so the
		// checks and the conversion are done per element here rather
		// than by IsWhollyKnown, Convert and a final loop, each a sort.
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if !ev.IsKnown() {
				return nil, diags
			}
			if ev.IsNull() {
				return invalid(`The given "for_each" argument value is unsuitable: "for_each" sets must not contain null values.`)
			}
			sv, err := convert.Convert(ev, cty.String)
			if err != nil || ev.Type().IsCollectionType() || ev.Type().IsObjectType() || ev.Type().IsTupleType() {
				return invalid(fmt.Sprintf(`The given "for_each" argument value is unsuitable: "for_each" supports maps and sets of strings, but you have provided a set containing type %s.`, ty.ElementType().FriendlyName()))
			}
			items = append(items, eachItem{key: sv.AsString(), value: sv})
		}
	default:
		return invalid(fmt.Sprintf(`The given "for_each" argument value is unsuitable: the "for_each" argument must be a map, or set of strings, and you have provided a value of type %s. Use toset(...) to turn a list of strings into a set.`, ty.FriendlyName()))
	}
	for _, it := range items {
		if it.key == "" {
			return invalid(`The given "for_each" argument value has an empty key; instance keys must not be empty.`)
		}
	}
	return items, diags
}

// forEachStrings takes the common for_each = toset([...strings...]) without
// building the cty set: iterating one sorts it, which was a third of
// expanding 100,000 keys. The keys are the distinct strings, as toset would
// make them. ok is false for any other shape, which forEach then evaluates
// as written.
func (l *loader) forEachStrings(expr hcl.Expression) ([]eachItem, hcl.Diagnostics, bool) {
	call, isCall := expr.(*hclsyntax.FunctionCallExpr)
	if !isCall || call.Name != "toset" || len(call.Args) != 1 || call.ExpandFinal {
		return nil, nil, false
	}
	v, diags := l.ev.eval(call.Args[0], blockScope())
	if diags.HasErrors() {
		return nil, diags, true
	}
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() || v.IsNull() || !(v.Type().IsTupleType() || v.Type().IsListType()) || measure(v).over() != "" {
		return nil, nil, false
	}
	seen := make(map[string]bool, v.LengthInt())
	items := make([]eachItem, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if ev.Type() != cty.String || !ev.IsKnown() || ev.IsNull() {
			return nil, nil, false
		}
		key := ev.AsString()
		if key == "" {
			return nil, nil, false // forEach reports it
		}
		if !seen[key] {
			seen[key] = true
			items = append(items, eachItem{key: key, value: ev})
		}
	}
	return items, diags, true
}
