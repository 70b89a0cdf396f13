package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
		{expr: `file("/etc/passwd")`, wantErr: true},    // only inside the configuration directory
		{expr: `file("../outside.txt")`, wantErr: true}, // nor by climbing out of it
		{expr: `file("link-out.txt")`, wantErr: true},   // nor through a symlink
		{expr: `file("seed.sql")`, want: cty.StringVal("SELECT 1;\n")},
		{expr: `fileexists("seed.sql")`, want: cty.True},
		{expr: `fileexists("nope.sql")`, want: cty.False},
		{expr: `templatefile("greet.tpl", { name = "pg" })`, want: cty.StringVal("hello pg")},
		{expr: `file("big.txt")`, wantErr: true}, // over MaxFileBytes
		{expr: `timestamp()`, wantErr: true},     // nothing time-dependent
		{expr: `length(range(40))`, want: cty.NumberIntVal(40)},
		{expr: `range(1, 7, 2)`, want: cty.ListVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(3), cty.NumberIntVal(5)})},
		{expr: `range(1e9)`, wantErr: true}, // refused by the meter before it is built
		{expr: `length(setproduct(range(2000), range(2000)))`, wantErr: true},
		{expr: `zipmap(["a", "b"], [1, 2])`, want: cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "b": cty.NumberIntVal(2)})},
		{expr: `jsondecode(jsonencode({ a = [1, "x"] })).a[1]`, want: cty.StringVal("x")},
		{expr: `regex("^pg(\\d+)$", "pg17")`, want: cty.TupleVal([]cty.Value{cty.StringVal("17")})},
		{expr: `length(regexall("a", "banana"))`, want: cty.NumberIntVal(3)},
		{expr: `replace("a1b22", "/[0-9]+/", "#")`, want: cty.StringVal("a#b#")},
		{expr: `substr("postgres", 0, 4)`, want: cty.StringVal("post")},
		{expr: `sum([1, 2, 3.5])`, want: cty.NumberFloatVal(6.5)},
		{expr: `one([])`, want: cty.NullVal(cty.DynamicPseudoType)},
		{expr: `one(["x", "y"])`, wantErr: true},
		{expr: `alltrue([true, true]) && !anytrue([false])`, want: cty.True},
		{expr: `startswith("sandbox.ci", "sandbox.") && endswith("a.sql", ".sql") && strcontains("abc", "b")`, want: cty.True},
		{expr: `base64decode(base64encode("pg"))`, want: cty.StringVal("pg")},
		{expr: `sha256("")`, want: cty.StringVal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")},
		{expr: `md5("a")`, want: cty.StringVal("0cc175b9c0f1b6a831c399e269772661")},
		{expr: `try(tonumber("x"), 7)`, want: cty.NumberIntVal(7)},
		{expr: `can(tonumber("x"))`, want: cty.False},
		{expr: `templatestring("$${a}-$${b}", { a = "x", b = 2 })`, want: cty.StringVal("x-2")},
		{expr: `templatestring("$${templatestring(\"x\", {})}", {})`, wantErr: true}, // no recursion
		{expr: `parseint("ff", 16) + abs(-1) + pow(2, 3) + floor(1.5) + ceil(0.2) + signum(-3)`, want: cty.NumberIntVal(255 + 1 + 8 + 1 + 1 - 1)},
		{expr: `formatdate("YYYY-MM-DD", timeadd("2026-12-01T00:00:00Z", "24h"))`, want: cty.StringVal("2026-12-02")},
		{expr: `reverse(["a", "b"])`, want: cty.TupleVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")})},
		{expr: `setsubtract(["a", "b"], ["a"])`, want: cty.SetVal([]cty.Value{cty.StringVal("b")})},
		{expr: `chunklist(["a", "b", "c"], 2)`, want: cty.ListVal([]cty.Value{cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), cty.ListVal([]cty.Value{cty.StringVal("c")})})},
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "cfg")
	for name, content := range map[string]string{"cfg/seed.sql": "SELECT 1;\n", "cfg/greet.tpl": "hello ${name}", "outside.txt": "x",
		"cfg/big.txt": strings.Repeat("x", MaxFileBytes+1)} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "outside.txt"), filepath.Join(sub, "link-out.txt")); err != nil {
		t.Fatal(err)
	}
	ctx := &hcl.EvalContext{Functions: functions(&meter{ctx: context.Background()}, sub)}
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
