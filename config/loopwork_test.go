package config

import (
	"fmt"
	"strings"
	"testing"
)

// numbers is an HCL list literal of 0..n-1.
func numbers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TestLoopWorkRefused: for expressions that would iterate billions of
// times are refused before they run, at the for that crosses the bound,
// wherever the expression sits. Before the bound, the first case spun for
// hours (no function call of ours runs inside a for).
func TestLoopWorkRefused(t *testing.T) {
	big := numbers(3000)
	project := "project \"p\" {\n  services = [\"postgres\"]\n}\n"
	cases := []struct {
		name, src string
		line      int
	}{
		{"nested in a local", project + "locals {\n  big = " + big + "\n  x = length([for a in local.big : [for b in local.big : [for c in local.big : c]]])\n}\n", 6},
		{"for in a for's collection", project + "locals {\n  big = " + big + "\n  x = [for x in [for a in local.big : [for b in local.big : b]] : x]\n}\n", 6},
		{"dependent inner collection", project + "locals {\n  big = [for i in " + numbers(900) + " : " + numbers(1000) + "]\n  x = [for row in local.big : [for a in row : [for b in row : b]]]\n}\n", 6},
		{"nested under a collection of a plain value", project + "locals {\n  big = " + big + "\n  x = length([for a in local.big : [for b in [a] : [for c in local.big : [for d in local.big : 1]]]])\n}\n", 6},
		{"template directive", project + "locals {\n  big = " + big + "\n  x = \"%{for a in local.big}%{for b in local.big}.%{endfor}%{endfor}\"\n}\n", 6},
		{"variable default", project + "variable \"v\" {\n  default = [for a in " + big + " : [for b in " + big + " : b]]\n}\n", 5},
		{"budget shared across locals", project + "locals {\n  big = " + numbers(800) + "\n  x = [for a in local.big : [for b in local.big : b]]\n  y = [for a in local.big : [for b in local.big : b]]\n}\n", 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := LoadSources("", map[string][]byte{"main.sbx.hcl": []byte(tc.src)}, Input{}, nil)
			var found bool
			for _, d := range diags {
				if d.Summary == "Configuration too expensive to evaluate" {
					found = true
					if d.Subject == nil || d.Subject.Start.Line != tc.line {
						t.Errorf("located at %v, want line %d", d.Subject, tc.line)
					}
				}
			}
			if !found {
				t.Fatalf("want a too-expensive error; got:\n%s", describeAll(diags))
			}
		})
	}
}

// TestLoopWorkAllowed: loops of realistic size pass, and a for over a
// small collection inside a big one is not counted as big × big.
func TestLoopWorkAllowed(t *testing.T) {
	src := "project \"p\" {\n  services = [\"postgres\"]\n}\nlocals {\n" +
		"  big   = " + numbers(100000) + "\n" +
		"  pairs = " + numbers(300) + "\n" +
		"  a = [for x in local.big : x * 2]\n" +
		"  b = { for x in local.big : tostring(x) => x if x % 2 == 0 }\n" +
		"  c = flatten([for x in local.pairs : [for y in local.pairs : [x, y]]])\n" +
		"  d = [for x in [for y in local.big : y + 1] : x]\n" +
		"  e = [for row in [for i in local.pairs : [i, i]] : [for v in row : v]]\n" +
		"}\n"
	_, diags := LoadSources("", map[string][]byte{"main.sbx.hcl": []byte(src)}, Input{}, nil)
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", describeAll(diags))
	}
}

// TestCallsInLoopRefused: a small-result function called in a loop over a
// big argument is work in proportion to the argument (cty walks it on
// every call), and is refused before the loop runs. Before, it ran 47 s.
func TestCallsInLoopRefused(t *testing.T) {
	src := "project \"p\" {\n  services = [\"postgres\"]\n}\nlocals {\n  big = " + numbers(5000) + "\n  x = [for a in local.big : length(local.big)]\n}\n"
	_, diags := LoadSources("", map[string][]byte{"main.sbx.hcl": []byte(src)}, Input{}, nil)
	if !diags.HasErrors() || !strings.Contains(describeAll(diags), "This call of length runs 5000 times") {
		t.Fatalf("want the loop limit at the call; got:\n%s", describeAll(diags))
	}
}
