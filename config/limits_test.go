package config

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestLoadCancelled: a cancelled context stops evaluation at the next
// function call, and the diagnostics say the check was incomplete.
func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := "locals {\n  a = upper(\"x\")\n}\nproject \"p\" {\n  services = [\"postgres\"]\n}\n"
	_, diags := LoadSourcesContext(ctx, "", map[string][]byte{"main.sbx.hcl": []byte(src)}, Input{}, nil)
	if !diags.HasErrors() || diags[0].Summary != "Evaluation interrupted" {
		t.Fatalf("want an Evaluation interrupted error first; got:\n%s", describeAll(diags))
	}
}

// TestMeterStopsMidExpression: cancellation reaches a function call inside
// a long-running expression.
func TestMeterStopsMidExpression(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m := &meter{ctx: ctx}
	upper := functions(m, t.TempDir())["upper"]
	if _, err := upper.Call([]cty.Value{cty.StringVal("x")}); err != nil {
		t.Fatalf("call before cancel: %v", err)
	}
	cancel()
	_, err := upper.Call([]cty.Value{cty.StringVal("x")})
	if err == nil || !strings.Contains(err.Error(), "evaluation stopped") {
		t.Fatalf("call after cancel: %v", err)
	}
}

// TestLargeButRealistic: a 100,000-key for_each stays within the limits.
func TestLargeButRealistic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-instance configuration")
	}
	var b strings.Builder
	b.WriteString("locals {\n  keys = [")
	for i := range 100000 {
		fmt.Fprintf(&b, "\"k%d\",", i)
	}
	b.WriteString("]\n  envs = { for k in local.keys : k => { ttl = \"4h\", svc = [\"postgres\"] } }\n}\n")
	b.WriteString("project \"p\" {\n  services = [\"postgres\"]\n}\n")
	b.WriteString("sandbox \"s\" {\n  for_each = merge(local.envs, {})\n  project  = project.p\n  services = each.value.svc\n  ttl      = each.value.ttl\n}\n")
	cfg, diags := LoadSources("", map[string][]byte{"main.sbx.hcl": []byte(b.String())}, Input{}, nil)
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", describeAll(diags))
	}
	if len(cfg.Instances) != 100000 {
		t.Fatalf("%d instances", len(cfg.Instances))
	}
}
