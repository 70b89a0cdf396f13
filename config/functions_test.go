package config

import (
	"context"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

func TestFunctions(t *testing.T) {
	tests := []struct {
		expr    string
		want    cty.Value
		wantErr bool
	}{
		{expr: `length("héllo")`, want: cty.NumberIntVal(5)},
		{expr: `length(["a", "b"])`, want: cty.NumberIntVal(2)},
		{expr: `length({ a = 1 })`, want: cty.NumberIntVal(1)},
		{expr: `length(1)`, wantErr: true},
		{expr: `format("%s:%d", "postgres", 17)`, want: cty.StringVal("postgres:17")},
		{expr: `format("%5s|%%|%-3s|", "a", "b")`, want: cty.StringVal("    a|%|b  |")},
		{expr: `format("%999999999s", "")`, wantErr: true},
		{expr: `format("%.2000s", "")`, wantErr: true},
		{expr: `formatlist("%s-%s", ["a", "b"], "x")`, want: cty.ListVal([]cty.Value{cty.StringVal("a-x"), cty.StringVal("b-x")})},
		{expr: `join(",", sort(distinct(concat(["b", "a"], ["a"]))))`, want: cty.StringVal("a,b")},
		{expr: `lookup({ a = "x" }, "b", "default")`, want: cty.StringVal("default")},
		{expr: `coalesce(null, "y")`, want: cty.StringVal("y")},
		{expr: `tolist(toset(["b", "a", "b"]))`, want: cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")})},
		{expr: `replace(trimspace("  a-b "), "-", "_")`, want: cty.StringVal("a_b")},
		{expr: `file("/etc/passwd")`, wantErr: true}, // no I/O functions
		{expr: `timestamp()`, wantErr: true},         // nothing time-dependent
	}
	ctx := &hcl.EvalContext{Functions: functions(&meter{ctx: context.Background()})}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			expr, diags := hclsyntax.ParseExpression([]byte(tt.expr), "test", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			got, diags := expr.Value(ctx)
			if diags.HasErrors() != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", diags, tt.wantErr)
			}
			if !tt.wantErr && !got.RawEquals(tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}
