package config

import (
	"strings"
	"testing"
)

// block writes a multi-line block: HCL's one-line form takes one argument.
func block(header string, lines ...string) string {
	return header + " {\n" + strings.Join(lines, "\n") + "\n}\n"
}

// trickyInputs are edge cases for the decoder's value handling: nulls,
// unknowns from failed references, odd types and odd references. They
// seed the fuzzer and must each load without panicking.
func trickyInputs() []string {
	p := block(`project "p"`, `services = ["postgres", "redis"]`)
	s := func(lines ...string) string {
		return p + block(`sandbox "s"`, append([]string{"project = project.p"}, lines...)...)
	}
	out := func(sandbox []string, value string) string {
		return s(sandbox...) + block(`output "o"`, "value = "+value)
	}
	v := func(lines ...string) string { return block(`variable "v"`, lines...) }
	return []string{
		s(`services = [null]`),
		s(`services = null`, `extensions = null`, `ttl = null`, `on_demand = null`),
		s(`extensions = { postgres = null }`),
		s(`extensions = { postgres = [null] }`),
		s(`extensions = { (var.nope) = [] }`),
		s(`extensions = { (local.k) = [] }`) + block("locals", `k = "redis"`),
		s(`extensions = []`),
		s(`for_each = { a = null }`, `services = each.value`),
		s(`for_each = toset([null])`),
		s(`for_each = toset([])`),
		s(`for_each = { a = var.nope }`, `services = [each.value]`),
		s(`for_each = var.nope`),
		s(`for_each = { a = 1 }`, `ttl = each.value.x`),
		s(`for_each = { a = { b = [1] } }`, `ttl = each.value.b`),
		s(`ttl = 1e400`),
		s(`ttl = "1e400d"`),
		s(`ttl = "9223372036854775807ns"`),
		p + block(`sandbox "s"`, `project = project.p[0]`),
		p + block(`sandbox "s"`, `project = project`),
		p + block(`sandbox "s"`, `project = project.p.name`),
		out(nil, `sandbox`),
		out(nil, `sandbox.s[0]`),
		out(nil, `sandbox["s"]`),
		out(nil, `sandbox.s.postgres[0]`),
		out(nil, `sandbox.s.postgres.url.x`),
		out(nil, `sandbox.s`),
		out([]string{`for_each = { a = 1 }`}, `sandbox.s[1].postgres`),
		out([]string{`for_each = { a = 1 }`}, `sandbox.s[var.k].postgres`) + v(`default = "a"`),
		out([]string{`on_demand = true`}, `[for k, v in sandbox.s : v.redis.url]`),
		out([]string{`on_demand = true`}, `sandbox.s["x"].redis.url`),
		block(`provider "docker"`, `memory_mb = 1e400`, `pids_limit = -1e400`),
		block(`provider "docker"`, block(`image "redis"`, `ref = null`, `modules = { search = null }`)),
		block(`provider "docker"`, block(`image "redis"`, `ref = "r"`, `modules = null`)),
		block("locals", `a = [for x in local.a : x]`),
		block("locals", `a = local`),
		block("locals", `a = var`),
		v(`type = map(object({ a = optional(string, "x") }))`, `default = { k = {} }`),
		v(`type = list(any)`, `default = [1, "a"]`),
		v(`default = null`) + block("locals", `x = var.v`),
		v(block("validation", `condition = null`, `error_message = null`)),
		v(`default = 1`, block("validation", `condition = var.v`, `error_message = 1`)),
		v(`default = 1`, block("validation", `condition = var.v > 2`, `error_message = []`)),
		v(`sensitive = null`, `description = null`, `default = 1`),
		block(`output "o"`, `value = format("%999999999s", "")`),
		block(`output "o"`, `value = each`),
	}
}

func TestTrickyInputsDoNotPanic(t *testing.T) {
	for _, src := range trickyInputs() {
		cfg, _ := LoadSources(".", map[string][]byte{"main.sbx.hcl": []byte(src)}, Input{}, DefaultCatalog())
		if cfg == nil {
			t.Fatalf("nil config for %q", src)
		}
		cfg.EvalOutputs(nil)
	}
}
