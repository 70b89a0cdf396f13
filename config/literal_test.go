package config

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// checkLiteral fails when isLiteral claims an expression that references
// something or holds a for: eval would then skip checks that matter.
func checkLiteral(t *testing.T, src string) (literal, parsed bool) {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return false, false
	}
	if !isLiteral(expr) {
		return false, true
	}
	if vars := expr.Variables(); len(vars) > 0 {
		t.Fatalf("isLiteral(%s) is true, but it references %d names", src, len(vars))
	}
	if hasFor(expr) {
		t.Fatalf("isLiteral(%s) is true, but it holds a for", src)
	}
	return true, true
}

func TestIsLiteral(t *testing.T) {
	cases := map[string]bool{
		`"4h"`:                        true,
		`1`:                           true,
		`true`:                        true,
		`null`:                        true,
		`["postgres", "redis"]`:       true,
		`{ postgres = ["pg_trgm"] }`:  true,
		`{ "postgres" = [] }`:         true,
		`{ (postgres) = [] }`:         false, // parenthesised: a reference
		`{ postgres.x = [] }`:         false,
		`"a${"b"}c"`:                  true,
		"<<EOT\nplain\nEOT\n":         true,
		`"${var.ttl}"`:                false,
		`"%{ if true }a%{ endif }"`:   false,
		`var.ttl`:                     false,
		`project.p`:                   false,
		`upper("a")`:                  false,
		`[for s in ["a"] : s]`:        false,
		`{ for k, v in {} : k => v }`: false,
		`{ a = [for s in [] : s] }`:   false,
		`["a", local.b]`:              false,
		`{ a = each.value }`:          false,
		`1 + 2`:                       false,
		`!true`:                       false,
		`true ? "a" : "b"`:            false,
		`["a"][0]`:                    false,
		`{ a = 1 }.a`:                 false,
		`["a"][*]`:                    false,
		`(1)`:                         false,
	}
	for src, want := range cases {
		got, parsed := checkLiteral(t, src)
		if !parsed {
			t.Errorf("%s does not parse", src)
			continue
		}
		if got != want {
			t.Errorf("isLiteral(%s) = %v, want %v", src, got, want)
		}
	}
}

func FuzzIsLiteral(f *testing.F) {
	for _, s := range []string{`{ postgres = ["pg_trgm"] }`, `"${var.a}"`, `[for s in x : s]`, `{ (k) = 1 }`, `"a${"b"}"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) { checkLiteral(t, src) })
}
