package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// item is one string of a list, with the range to blame for it: the list
// element when the list is written out literally, else the whole expression.
type item struct {
	Value string
	Range hcl.Range
}

// mapItem is one entry of a map, with the range of its key and the
// expression that produced its value (the whole map expression when the map
// was computed rather than written out).
type mapItem struct {
	Key       string
	KeyRange  hcl.Range
	Value     cty.Value
	ValueExpr hcl.Expression
}

// typed converts an evaluated attribute value to ty. ok is false when there
// is nothing to use: the value is null (treated as absent), unknown (an
// earlier error, already reported) or of the wrong type (reported here).
func typed(v cty.Value, expr hcl.Expression, ty cty.Type, attr string) (cty.Value, bool, hcl.Diagnostics) {
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsWhollyKnown() {
		return cty.NilVal, false, nil
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		var pe cty.PathError
		var path cty.Path
		if errors.As(err, &pe) {
			path = pe.Path
		}
		return cty.NilVal, false, hcl.Diagnostics{errorDiag("Incorrect attribute value type",
			fmt.Sprintf("Inappropriate value for attribute %q: %s%s.", attr, pathPrefix(path), err), blameConversion(v, expr, ty))}
	}
	return cv, true, nil
}

// listItems converts v to a list of strings.
func listItems(v cty.Value, expr hcl.Expression, attr string) ([]item, bool, hcl.Diagnostics) {
	lv, ok, diags := typed(v, expr, cty.List(cty.String), attr)
	if !ok {
		return nil, false, diags
	}
	ranges := elementRanges(expr, lv.LengthInt())
	items := make([]item, 0, len(ranges))
	i := 0
	for it := lv.ElementIterator(); it.Next(); i++ {
		_, ev := it.Element()
		if ev.IsNull() {
			diags = append(diags, errorDiag("Invalid value",
				fmt.Sprintf("Element %d of %q is null; list elements must be strings.", i, attr), ranges[i]))
			continue
		}
		items = append(items, item{Value: ev.AsString(), Range: ranges[i]})
	}
	return items, true, diags
}

// mapItems converts v to a map of elem, sorted by key.
func mapItems(v cty.Value, expr hcl.Expression, elem cty.Type, attr string) ([]mapItem, bool, hcl.Diagnostics) {
	mv, ok, diags := typed(v, expr, cty.Map(elem), attr)
	if !ok {
		return nil, false, diags
	}
	diags = append(diags, duplicateKeys(expr, attr)...)
	static := staticPairs(expr)
	var items []mapItem
	for it := mv.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		key := k.AsString()
		mi := mapItem{Key: key, KeyRange: expr.Range(), Value: ev, ValueExpr: expr}
		if p, ok := static[key]; ok {
			mi.KeyRange, mi.ValueExpr = p.Key.Range(), p.Value
		}
		items = append(items, mi)
	}
	return items, true, diags
}

// elementRanges gives each of n list elements a range: its own when expr
// is a literal tuple of n elements, else the whole expression's.
func elementRanges(expr hcl.Expression, n int) []hcl.Range {
	ranges := make([]hcl.Range, n)
	exprs, diags := hcl.ExprList(expr)
	for i := range ranges {
		ranges[i] = expr.Range()
		if !diags.HasErrors() && len(exprs) == n {
			ranges[i] = exprs[i].Range()
		}
	}
	return ranges
}

// staticPairs indexes the entries of a literal object by key. Keys that
// need evaluation are left out; their entries are blamed on the whole
// expression.
func staticPairs(expr hcl.Expression) map[string]hcl.KeyValuePair {
	pairs, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		return nil
	}
	out := make(map[string]hcl.KeyValuePair, len(pairs))
	for _, p := range pairs {
		if key, ok := literalKey(p.Key); ok {
			out[key] = p
		}
	}
	return out
}

// literalKey returns the key of a literal object entry: a bare name or a
// constant string.
func literalKey(expr hcl.Expression) (string, bool) {
	if kw := hcl.ExprAsKeyword(expr); kw != "" {
		return kw, true
	}
	if k, d := expr.Value(nil); !d.HasErrors() {
		return stringKey(k)
	}
	return "", false
}

// duplicateKeys reports a key written twice in a literal map: hcl keeps
// the last silently, which would drop a feature list without a word.
func duplicateKeys(expr hcl.Expression, attr string) hcl.Diagnostics {
	pairs, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		return nil
	}
	var out hcl.Diagnostics
	seen := map[string]hcl.Range{}
	for _, p := range pairs {
		key, ok := literalKey(p.Key)
		if !ok {
			continue
		}
		if prev, dup := seen[key]; dup {
			out = append(out, errorDiag("Duplicate map key",
				fmt.Sprintf("The key %q was already set in %q at %s; each key may appear once.", key, attr, prev), p.Key.Range()))
			continue
		}
		seen[key] = p.Key.Range()
	}
	return out
}

// blameConversion finds the most precise range for a failed conversion of
// v to ty: it descends into literal lists and maps to the first element
// that does not convert.
func blameConversion(v cty.Value, expr hcl.Expression, ty cty.Type) hcl.Range {
	if !v.IsWhollyKnown() || v.IsNull() || !v.CanIterateElements() {
		return expr.Range()
	}
	switch {
	case ty.IsListType() || ty.IsSetType():
		exprs, diags := hcl.ExprList(expr)
		if diags.HasErrors() || len(exprs) != v.LengthInt() {
			break
		}
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			if _, err := convert.Convert(ev, ty.ElementType()); err != nil {
				return blameConversion(ev, exprs[i], ty.ElementType())
			}
		}
	case ty.IsMapType():
		pairs := staticPairs(expr)
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			key, ok := stringKey(k)
			if !ok {
				continue
			}
			if _, err := convert.Convert(ev, ty.ElementType()); err != nil {
				if p, ok := pairs[key]; ok {
					return blameConversion(ev, p.Value, ty.ElementType())
				}
			}
		}
	}
	return expr.Range()
}

// pathPrefix renders where in a value a conversion failed.
func pathPrefix(path cty.Path) string {
	var parts []string
	for _, step := range path {
		switch s := step.(type) {
		case cty.GetAttrStep:
			parts = append(parts, fmt.Sprintf("attribute %q", s.Name))
		case cty.IndexStep:
			if s.Key.Type() == cty.Number && s.Key.IsKnown() && !s.Key.IsNull() {
				parts = append(parts, "element "+s.Key.AsBigFloat().Text('f', -1))
			} else if k, ok := stringKey(s.Key); ok {
				parts = append(parts, fmt.Sprintf("key %q", k))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + ": "
}

// stringKey returns a known, non-null string value.
func stringKey(v cty.Value) (string, bool) {
	if !v.IsKnown() || v.IsNull() || v.IsMarked() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}
