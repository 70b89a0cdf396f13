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
	if cv, ok := convertPlain(v, ty); ok {
		return cv, true, nil
	}
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
	entries := literalEntries(expr)
	diags = append(diags, duplicateKeys(entries, attr)...)
	static := staticPairs(entries)
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

// literalEntry is one entry of a literal object with a literal key.
type literalEntry struct {
	key  string
	pair hcl.KeyValuePair
}

// literalEntries lists, in source order, the entries of a literal object
// whose keys are literal; nil when expr is not a literal object. Entries
// whose keys need evaluation are left out.
func literalEntries(expr hcl.Expression) []literalEntry {
	pairs, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		return nil
	}
	out := make([]literalEntry, 0, len(pairs))
	for _, p := range pairs {
		if key, ok := literalKey(p.Key); ok {
			out = append(out, literalEntry{key: key, pair: p})
		}
	}
	return out
}

// staticPairs indexes literal entries by key, the last of duplicates
// winning as in hcl. Entries that are not there are blamed on the whole
// expression.
func staticPairs(entries []literalEntry) map[string]hcl.KeyValuePair {
	if entries == nil {
		return nil
	}
	out := make(map[string]hcl.KeyValuePair, len(entries))
	for _, e := range entries {
		out[e.key] = e.pair
	}
	return out
}

// literalKey returns the key of a literal object entry: a bare name or a
// constant string.
func literalKey(expr hcl.Expression) (string, bool) {
	if kw := hcl.ExprAsKeyword(expr); kw != "" {
		return kw, true
	}
	if k, d := (*meter)(nil).valueWithin(expr, nil); !d.HasErrors() {
		return stringKey(k)
	}
	return "", false
}

// duplicateKeys reports a key written twice in a literal map: hcl keeps
// the last silently, which would drop a feature list without a word.
func duplicateKeys(entries []literalEntry, attr string) hcl.Diagnostics {
	var out hcl.Diagnostics
	seen := make(map[string]hcl.Range, len(entries))
	for _, e := range entries {
		if prev, dup := seen[e.key]; dup {
			out = append(out, errorDiag("Duplicate map key",
				fmt.Sprintf("The key %s was already set in %q at %s; each key may appear once.", quote(e.key), attr, prev), e.pair.Key.Range()))
			continue
		}
		seen[e.key] = e.pair.Key.Range()
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
		pairs := staticPairs(literalEntries(expr))
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
				parts = append(parts, "key "+quote(k))
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
