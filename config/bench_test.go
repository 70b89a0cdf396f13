package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// manySandboxes is the configuration of the CLI's BenchmarkPlan1000: n
// sandbox blocks spread over 20 projects.
func manySandboxes(n int) []byte {
	var b strings.Builder
	for p := range 20 {
		fmt.Fprintf(&b, "project \"p%02d\" {\n  services = [\"postgres\", \"redis\"]\n  extensions = { postgres = [\"vector\"] }\n}\n\n", p)
	}
	for i := range n {
		ext := `{ postgres = ["pg_trgm"] }`
		if i%4 == 0 {
			ext = `{ redis = ["search"] }`
		}
		fmt.Fprintf(&b, "sandbox \"s%04d\" {\n  project    = project.p%02d\n  extensions = %s\n  ttl        = \"4h\"\n}\n\n", i, i%20, ext)
	}
	return []byte(b.String())
}

// manyKeys is one sandbox block with for_each over n keys, each used in
// every argument.
func manyKeys(n int) []byte {
	var b strings.Builder
	b.WriteString("project \"p\" {\n  services = [\"postgres\", \"redis\"]\n}\n\nlocals {\n  envs = {\n")
	for i := range n {
		fmt.Fprintf(&b, "    k%04d = { ttl = \"%dh\", svc = [\"postgres\"] }\n", i, 1+i%24)
	}
	b.WriteString("  }\n}\n\nsandbox \"s\" {\n  for_each = local.envs\n  project  = project.p\n  services = each.value.svc\n  ttl      = each.value.ttl\n}\n")
	return []byte(b.String())
}

// manyBlocks is n for_each blocks of one key each, and an output: the
// output's check builds the sandbox object of every instance.
func manyBlocks(n int) []byte {
	var b strings.Builder
	b.WriteString("project \"p\" {\n  services = [\"postgres\", \"redis\"]\n}\n")
	for i := range n {
		fmt.Fprintf(&b, "sandbox \"s%04d\" {\n  for_each = toset([\"a\"])\n  project  = project.p\n}\n", i)
	}
	b.WriteString("output \"u\" {\n  value     = sandbox.s0000[\"a\"].postgres.url\n  sensitive = true\n}\n")
	return []byte(b.String())
}

func benchLoad(b *testing.B, src []byte, wantInstances int) {
	b.Helper()
	sources := map[string][]byte{"main.sbx.hcl": src}
	cat := DefaultCatalog()
	b.ReportAllocs()
	for b.Loop() {
		cfg, diags := LoadSources("", sources, Input{}, cat)
		if diags.HasErrors() || len(cfg.Instances) != wantInstances {
			b.Fatal(diags, len(cfg.Instances))
		}
	}
}

func BenchmarkLoad1000(b *testing.B) { benchLoad(b, manySandboxes(1000), 1000) }

// BenchmarkLoadForEach1000 and ...100 together show whether one block's
// cost grows linearly with its number of keys.
func BenchmarkLoadForEach1000(b *testing.B) { benchLoad(b, manyKeys(1000), 1000) }
func BenchmarkLoadForEach100(b *testing.B)  { benchLoad(b, manyKeys(100), 100) }

// BenchmarkLoadBlocks1000 and ...100: the same for the number of blocks.
func BenchmarkLoadBlocks1000(b *testing.B) { benchLoad(b, manyBlocks(1000), 1000) }
func BenchmarkLoadBlocks100(b *testing.B)  { benchLoad(b, manyBlocks(100), 100) }

// BenchmarkParse1000 is the floor under BenchmarkLoad1000: hcl's parser
// alone.
func BenchmarkParse1000(b *testing.B) {
	src := manySandboxes(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := hclsyntax.ParseConfig(src, "main.sbx.hcl", hcl.InitialPos); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}

// BenchmarkParseFiles1000 is what Load does instead: the same file in
// pieces of about 1 KB, on every core (parse.go).
func BenchmarkParseFiles1000(b *testing.B) {
	sources := map[string][]byte{"main.sbx.hcl": manySandboxes(1000)}
	names := []string{"main.sbx.hcl"}
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := parseFiles(names, sources); diags[0].HasErrors() {
			b.Fatal(diags)
		}
	}
}

// forEachSet is one sandbox block with for_each = toset([...]) over n
// literal keys: the shape of issue 8's quadratic report.
func forEachSet(n int) []byte {
	var b strings.Builder
	b.WriteString("project \"p\" {\n  services = [\"postgres\"]\n}\n\nsandbox \"s\" {\n  project  = project.p\n  for_each = toset([")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "\"k%d\"", i)
	}
	b.WriteString("])\n}\n")
	return []byte(b.String())
}

// manyLocals is n independent locals and one that references them all.
func manyLocals(n int) []byte {
	var b strings.Builder
	b.WriteString("project \"p\" {\n  services = [\"postgres\"]\n}\n\nlocals {\n")
	for i := range n {
		fmt.Fprintf(&b, "  l%d = \"v%d\"\n", i, i)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

func BenchmarkLoadForEachSet10000(b *testing.B)  { benchLoad(b, forEachSet(10000), 10000) }
func BenchmarkLoadForEachSet100000(b *testing.B) { benchLoad(b, forEachSet(100000), 100000) }
func BenchmarkLoadLocals10000(b *testing.B)      { benchLoad(b, manyLocals(10000), 0) }

// BenchmarkLoad5000 is the configuration of scripts/benchplan at 5,000.
func BenchmarkLoad5000(b *testing.B) { benchLoad(b, manySandboxes(5000), 5000) }
