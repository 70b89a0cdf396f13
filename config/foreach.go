package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
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
		if !v.IsWhollyKnown() {
			return nil, diags
		}
		sv, err := convert.Convert(v, cty.Set(cty.String))
		if err != nil {
			return invalid(fmt.Sprintf(`The given "for_each" argument value is unsuitable: "for_each" supports maps and sets of strings, but you have provided a set containing type %s.`, ty.ElementType().FriendlyName()))
		}
		for it := sv.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if ev.IsNull() {
				return invalid(`The given "for_each" argument value is unsuitable: "for_each" sets must not contain null values.`)
			}
			items = append(items, eachItem{key: ev.AsString(), value: ev})
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
