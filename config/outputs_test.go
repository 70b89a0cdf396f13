package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

const outputsSrc = `
variable "suffix" {
  default = "?sslmode=disable"
}
project "p" {
  services = ["postgres", "redis"]
}
sandbox "ci" {
  project  = project.p
  services = ["postgres"]
}
sandbox "fleet" {
  project  = project.p
  for_each = toset(["a", "b"])
}
sandbox "agent" {
  project   = project.p
  on_demand = true
}
output "ci_url" {
  value     = "${sandbox.ci.postgres.url}${var.suffix}"
  sensitive = true
}
output "fleet_a_redis" {
  value = sandbox.fleet["a"].redis.host
}
output "fleet_ports" {
  value = { for k, s in sandbox.fleet : k => s.postgres.port }
}
output "agent_dev7" {
  value = sandbox.agent["dev-7"].postgres.user
}
output "redis_db" {
  value = sandbox.fleet["b"].redis.database
}
output "constant" {
  value = upper(project.p.name)
}
`

func creds(host string) map[string]map[string]string {
	return map[string]map[string]string{
		"postgres": {"url": "postgres://u:pw@" + host + ":5432/db", "host": host, "port": "5432", "user": "u", "password": "pw", "database": "db"},
		"redis":    {"url": "redis://:pw@" + host + ":6379", "host": host, "port": "6379", "user": "default", "password": "pw"},
	}
}

func TestEvalOutputs(t *testing.T) {
	cfg := load(t, outputsSrc, Input{})
	all := map[Address]map[string]map[string]string{
		{Name: "ci"}:                                creds("ci"),
		{Name: "fleet", Key: "a", HasKey: true}:     creds("a"),
		{Name: "fleet", Key: "b", HasKey: true}:     creds("b"),
		{Name: "agent", Key: "dev-7", HasKey: true}: creds("dev7"),
	}
	got, diags := cfg.EvalOutputs(all)
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", describeAll(diags))
	}
	want := map[string]cty.Value{
		"ci_url":        cty.StringVal("postgres://u:pw@ci:5432/db?sslmode=disable"),
		"fleet_a_redis": cty.StringVal("a"),
		"fleet_ports":   cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(5432), "b": cty.NumberIntVal(5432)}),
		"agent_dev7":    cty.StringVal("u"),
		"redis_db":      cty.NullVal(cty.String),
		"constant":      cty.StringVal("P"),
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(cty.Value.RawEquals)); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
}

func TestEvalOutputsMissingInstances(t *testing.T) {
	cfg := load(t, outputsSrc, Input{})
	// Only fleet["a"] is provisioned: everything else that needs a missing
	// instance is reported, naming it, and left out.
	got, diags := cfg.EvalOutputs(map[Address]map[string]map[string]string{
		{Name: "fleet", Key: "a", HasKey: true}: creds("a"),
	})
	var gotNames []string
	for name := range got {
		gotNames = append(gotNames, name)
	}
	if diff := cmp.Diff([]string{"constant", "fleet_a_redis"}, SortedUnique(gotNames)); diff != "" {
		t.Errorf("evaluated outputs (-want +got):\n%s", diff)
	}
	type miss struct{ Summary, Detail string }
	var gotDiags []miss
	for _, d := range diags {
		gotDiags = append(gotDiags, miss{d.Summary, d.Detail})
	}
	wantDiags := []miss{
		{"Sandbox not provisioned", `Output "agent_dev7" refers to sandbox.agent["dev-7"], which has not been provisioned. Run "sandboxer apply" or "sandboxer request sandbox.agent --key dev-7" first.`},
		{"Sandbox not provisioned", `Output "ci_url" refers to sandbox.ci, which has not been provisioned. Run "sandboxer apply" first.`},
		{"Sandbox not provisioned", `Output "fleet_ports" refers to sandbox.fleet["b"], which has not been provisioned. Run "sandboxer apply" first.`},
		{"Sandbox not provisioned", `Output "redis_db" refers to sandbox.fleet["b"], which has not been provisioned. Run "sandboxer apply" first.`},
	}
	if diff := cmp.Diff(wantDiags, gotDiags); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	for _, d := range diags {
		if d.Subject == nil || d.Subject.Filename != "main.sbx.hcl" {
			t.Errorf("diagnostic %q has no subject in main.sbx.hcl", d.Summary)
		}
	}
}
