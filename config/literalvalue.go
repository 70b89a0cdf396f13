package config

import (
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The arguments of most sandbox blocks are constants: a quoted string, a
// list of them, a map of such lists. hcl evaluates even those through
// its general machinery (a buffer and a set of marks per string, cty's
// conversions per map), which was a third of decoding 5,000 blocks. The
// functions here read such constants straight from the syntax tree and
// return exactly what that evaluation and the decoding after it return;
// on anything else ok is false and the caller takes the general path.

// literalValue is expr.Value for a literal value, a quoted string without
// interpolation, or a tuple of those: hcl builds the same values (a
// string template of one literal part is that part's string, never null
// and without marks; a tuple is cty.TupleVal of its elements).
func literalValue(expr hcl.Expression) (cty.Value, bool) {
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		return e.Val, true
	case *hclsyntax.TemplateExpr:
		s, ok := literalString(e)
		if !ok {
			return cty.NilVal, false
		}
		return cty.StringVal(s), true
	case *hclsyntax.TupleConsExpr:
		vals := make([]cty.Value, len(e.Exprs))
		for i, x := range e.Exprs {
			v, ok := literalValue(x)
			if !ok {
				return cty.NilVal, false
			}
			vals[i] = v
		}
		return cty.TupleVal(vals), true
	}
	return cty.NilVal, false
}

// literalString is the string a template of literal string parts renders.
func literalString(e *hclsyntax.TemplateExpr) (string, bool) {
	if len(e.Parts) == 1 {
		return literalPart(e.Parts[0])
	}
	var b strings.Builder
	for _, p := range e.Parts {
		s, ok := literalPart(p)
		if !ok {
			return "", false
		}
		b.WriteString(s)
	}
	return b.String(), true
}

func literalPart(p hclsyntax.Expression) (string, bool) {
	lit, ok := p.(*hclsyntax.LiteralValueExpr)
	if !ok || lit.Val.Type() != cty.String || lit.Val.IsMarked() || !lit.Val.IsKnown() || lit.Val.IsNull() {
		return "", false
	}
	return lit.Val.AsString(), true
}

// featureEntry is one service of an extensions map and its features, as
// featureSet checks them.
type featureEntry struct {
	Key      string
	KeyRange hcl.Range
	// features lists the entry's features (listItems of its value).
	features func() ([]item, hcl.Diagnostics)
}

// literalFeatureEntries reads an extensions map written as a literal
// object of literal string lists, `{ postgres = ["vector"] }`: what
// mapItems and listItems make of its value, sorted by key, with the same
// ranges. A key written twice (which mapItems reports), a non-ASCII key
// (whose evaluation normalises it) or anything not constant: ok is false.
func literalFeatureEntries(expr hcl.Expression) ([]featureEntry, bool) {
	obj, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil, false
	}
	entries := make([]featureEntry, 0, len(obj.Items))
	for _, it := range obj.Items {
		key, ok := literalKey(it.KeyExpr)
		if !ok || !isASCII(key) {
			return nil, false
		}
		tuple, ok := it.ValueExpr.(*hclsyntax.TupleConsExpr)
		if !ok {
			return nil, false
		}
		feats := make([]item, len(tuple.Exprs))
		for i, x := range tuple.Exprs {
			t, ok := x.(*hclsyntax.TemplateExpr)
			if !ok {
				return nil, false
			}
			s, ok := literalString(t)
			if !ok {
				return nil, false
			}
			feats[i] = item{Value: s, Range: x.Range()}
		}
		entries = append(entries, featureEntry{Key: key, KeyRange: it.KeyExpr.Range(),
			features: func() ([]item, hcl.Diagnostics) { return feats, nil }})
	}
	slices.SortFunc(entries, func(a, b featureEntry) int { return strings.Compare(a.Key, b.Key) })
	for i := 1; i < len(entries); i++ {
		if entries[i].Key == entries[i-1].Key {
			return nil, false
		}
	}
	return entries, true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
