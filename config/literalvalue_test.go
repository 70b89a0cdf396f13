package config

import (
	"reflect"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Expressions of every shape the fast paths must take or refuse.
var literalCorpus = []string{
	`"4h"`, `""`, `"a\nb"`, `"\"q\""`, `"tab\there"`, `"é"`, "\"e\u0301\"", `"$${x}"`, `"%%{x}"`,
	`"${"x"}"`, `"a${"b"}c"`, `"${1}"`, `"${var.x}"`, `"%{ if true }x%{ endif }"`,
	`1`, `1.5`, `-1`, `true`, `false`, `null`, `x`, `var.x`, `project.p`, `(1)`, `("a")`,
	`[]`, `["a"]`, `["a", "b",]`, `["a", 1, true]`, `[["a"]]`, `["a", var.x]`, `[for x in [] : x]`, `["${"a"}"]`,
	`{}`, `{ a = "b" }`, `{ postgres = ["vector"] }`, `{ postgres = ["vector", "postgis"], redis = [] }`,
	`{ redis = ["search"], postgres = ["pg_trgm"] }`, `{ "postgres" = ["vector"] }`, `{ postgres: ["vector"] }`,
	`{ postgres = ["vector"], postgres = ["postgis"] }`, `{ (postgres) = ["vector"] }`, `{ "${"postgres"}" = ["x"] }`,
	`{ postgres = "vector" }`, `{ postgres = [1] }`, `{ postgres = [null] }`, `{ postgres = [var.x] }`, `{ postgres = ["a${"b"}"] }`,
	`{ postgrés = ["x"] }`, `{ "é" = ["x"] }`, `{ b = [], a = [], c = ["z", "y"] }`, `{ postgres = tolist(["x"]) }`,
	`{ for k in ["a"] : k => [k] }`, `{ postgres = ["vector"] }["postgres"]`, `{ redis = ["search"], }`,
	`{ 1 = ["x"] }`, `{ true = ["x"] }`, `{ null = ["x"] }`,
}

func parseExpr(t *testing.T, src string) hcl.Expression {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.Pos{Line: 3, Column: 7, Byte: 40})
	if diags.HasErrors() {
		return nil
	}
	return expr
}

func TestLiteralValueIsValue(t *testing.T) {
	taken, refused := 0, 0
	for _, src := range literalCorpus {
		expr := parseExpr(t, src)
		if expr == nil {
			continue
		}
		got, ok := literalValue(expr)
		if !ok {
			refused++
			continue
		}
		taken++
		want, diags := expr.Value(nil)
		if diags.HasErrors() {
			t.Errorf("%s: literalValue took an expression hcl cannot evaluate: %v", src, diags)
			continue
		}
		if !got.Type().Equals(want.Type()) || !got.RawEquals(want) {
			t.Errorf("%s: literalValue = %#v, hcl evaluates %#v", src, got, want)
		}
	}
	if taken < 10 || refused < 10 {
		t.Fatalf("%d expressions taken, %d refused; the corpus must exercise both", taken, refused)
	}
}

// literalFeatureEntries must give what featureSet reads from the value:
// mapItems then listItems, with their ranges and no diagnostics.
func TestLiteralFeatureEntriesAreMapItems(t *testing.T) {
	taken, refused := 0, 0
	for _, src := range literalCorpus {
		expr := parseExpr(t, src)
		if expr == nil {
			continue
		}
		got, ok := literalFeatureEntries(expr)
		if !ok {
			refused++
			continue
		}
		taken++
		v, diags := expr.Value(nil)
		items, ok, more := mapItems(v, expr, cty.List(cty.String), "extensions")
		diags = append(diags, more...)
		if !ok || diags.HasErrors() || len(diags) > 0 {
			t.Errorf("%s: taken, but the general path says ok=%v %v", src, ok, diags)
			continue
		}
		if len(got) != len(items) {
			t.Errorf("%s: %d entries, mapItems has %d", src, len(got), len(items))
			continue
		}
		for i, it := range items {
			feats, _, more := listItems(it.Value, it.ValueExpr, "extensions")
			gotFeats, gotMore := got[i].features()
			if got[i].Key != it.Key || got[i].KeyRange != it.KeyRange || !reflect.DeepEqual(gotFeats, feats) || len(more) != len(gotMore) {
				t.Errorf("%s: entry %d = %q %v %v %v, general path %q %v %v %v", src, i,
					got[i].Key, got[i].KeyRange, gotFeats, gotMore, it.Key, it.KeyRange, feats, more)
			}
		}
	}
	if taken < 5 || refused < 10 {
		t.Fatalf("%d expressions taken, %d refused; the corpus must exercise both", taken, refused)
	}
}
