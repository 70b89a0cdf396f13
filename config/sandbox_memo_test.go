package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// loadSandboxesWith runs Load's phases up to sandboxes, decoding them
// with memo (nil: every block in full).
func loadSandboxesWith(dir string, sources map[string][]byte, memo *sandboxMemo) (*Config, string) {
	cfg := newConfig(dir)
	names := make([]string, 0, len(sources))
	for name, src := range sources {
		names = append(names, name)
		cfg.Sources[name] = src
	}
	sort.Strings(names)
	l := &loader{cfg: cfg, cat: DefaultCatalog(), ev: newEvaluator(context.Background(), cfg), unknownServices: map[string]bool{}}
	var diags hcl.Diagnostics
	byType := map[string]hcl.Blocks{}
	files, fileDiags := parseFiles(names, sources)
	for i, name := range names {
		diags = append(diags, fileDiags[i]...)
		if files[i] == nil {
			continue
		}
		cfg.Files[name] = files[i]
		content, d := files[i].Body.Content(fileSchema)
		diags = append(diags, d...)
		for _, b := range content.Blocks {
			byType[b.Type] = append(byType[b.Type], b)
		}
	}
	diags = append(diags, l.decodeVariables(byType["variable"])...)
	diags = append(diags, l.decodeLocals(byType["locals"])...)
	diags = append(diags, l.decodeProvider(byType["provider"])...)
	diags = append(diags, l.decodeProjects(byType["project"])...)
	l.ev.settle()
	diags = append(diags, l.decodeSandboxesMemo(byType["sandbox"], memo)...)
	return cfg, diagText(dedupe(diags))
}

// amplified appends to src, for every sandbox block in it, copies of the
// block under new names, so that a memo sees the same arguments again at
// other places.
func amplified(src []byte, name string, copies int) []byte {
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return src
	}
	out := append([]byte{}, src...)
	for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
		if blk.Type != "sandbox" || len(blk.Labels) != 1 {
			continue
		}
		r, label := blk.Range(), blk.LabelRanges[0]
		for i := range copies {
			out = fmt.Appendf(out, "\n%s%q%s\n", src[r.Start.Byte:label.Start.Byte],
				fmt.Sprintf("%s_copy%d", blk.Labels[0], i), src[label.End.Byte:r.End.Byte])
		}
	}
	return out
}

// memoCorpus is literal sandbox blocks of every argument, valid and not,
// each shape written several times.
func memoCorpus() []byte {
	var b strings.Builder
	b.WriteString(`project "pa" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["vector"] }
  database   = "pdb"
  env_prefix = "PA"
  seed_snapshot = "base"
}
project "pb" {
  services = ["postgres"]
  runtime  = "kubernetes"
}
project "pc" {
  services = ["postgres", "nope"]
}
provider "kubernetes" {
}
`)
	shapes := []string{
		`project = project.pa`,
		`project = project.pb`,
		`project = project.pc`,
		`project = project.pc
  services = ["postgres"]`,
		`project = project.pa
  services = ["redis"]
  extensions = { redis = ["search"], postgres = ["pg_trgm", "vector", "pg_trgm"] }`,
		`project = project.pa
  extensions = { postgres = ["postgis"] }
  ttl = "0"`,
		`project = project.pa
  ttl = "7d"
  on_demand = true`,
		`project = project.pa
  on_demand = false
  carry_data = true
  database = "own"
  env_prefix = "OWN"`,
		`project = project.pb
  runtime = "docker"
  seed_snapshot = "snap1"`,
		`project = project.pa
  runtime = "kubernetes"`,
		// The same text under two names.
		`project = project.pa
  carry_data = true`,
		`project = project.pa
  on_demand = true`,
		`project = project.pa
  services = []`,
		`project = project.pa
  services = ["mongodb"]`,
		`project = project.pb
  services = ["redis"]`,
		`project = project.pb
  extensions = { redis = ["search"] }`,
		`project = project.pa
  extensions = { postgres = ["plpython3u"] }`,
		`project = project.pa
  ttl = "1s"`,
		`project = project.pa
  ttl = 5`,
		`project = project.nope`,
		`project = "pa"`,
		`project = project.pa
  unknown = 1`,
		`project = project.pa
  seed_sql = ["missing.sql"]`,
		`project = project.pa
  on_demand = true
  pool {
    size = 2
  }`,
		`project = project.pa
  for_each = toset(["a", "b"])`,
		`project = project.pa
  database = "bad name"`,
		`project = project.pb
  database = "x"
  runtime = "docker"`,
	}
	for i := range 160 {
		fmt.Fprintf(&b, "sandbox \"m%03d\" {\n  %s\n}\n", i, shapes[i%len(shapes)])
	}
	// A block repeated with a comment or other spacing: a different key.
	fmt.Fprintf(&b, "sandbox \"spaced\" {\n  project  =  project.pa\n  ttl = \"7d\" # a week\n}\n")
	return []byte(b.String())
}

// TestSandboxMemoIsDecode: decoding with the memo gives the sandboxes,
// instances and diagnostics (text, ranges, order) of decoding every block
// in full, for every fixture (its sandbox blocks written again under other
// names) and a corpus of literal blocks, on one core and on several.
func TestSandboxMemoIsDecode(t *testing.T) {
	type config struct {
		dir     string
		sources map[string][]byte
	}
	configs := map[string]config{
		"corpus": {"", map[string][]byte{"main.sbx.hcl": memoCorpus()}},
		"many":   {"", map[string][]byte{"main.sbx.hcl": manySandboxes(300)}},
		"blocks": {"", map[string][]byte{"main.sbx.hcl": manyBlocks(30)}},
		"two files": {"", map[string][]byte{"a.sbx.hcl": manySandboxes(40), "b.sbx.hcl": amplified(
			[]byte("sandbox \"z\" {\n  project = project.p01\n  ttl = \"4h\"\n  extensions = { redis = [\"search\"] }\n}\n"), "b.sbx.hcl", 80)}},
	}
	dirs, _ := filepath.Glob("testdata/*/*")
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.hcl"))
		for _, copies := range []int{2, 70} {
			if copies > 2 && filepath.Base(dir) == "limits" {
				continue // each copy runs into the evaluation limits: seconds
			}
			sources := map[string][]byte{}
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				sources[filepath.Base(f)] = amplified(src, filepath.Base(f), copies)
			}
			configs[fmt.Sprintf("%s×%d", dir, copies)] = config{dir, sources}
		}
	}
	if len(configs) < 40 {
		t.Fatalf("only %d configurations; the check would be vacuous", len(configs))
	}
	hits := 0
	for _, procs := range []int{1, 2} {
		prev := runtime.GOMAXPROCS(procs)
		for name, c := range configs {
			want, wantDiags := loadSandboxesWith(c.dir, c.sources, nil)
			got, gotDiags := loadSandboxesWith(c.dir, c.sources, newSandboxMemo())
			if diff := cmp.Diff(wantDiags, gotDiags); diff != "" {
				t.Errorf("%s on %d cores: diagnostics differ (-full +memo):\n%s", name, procs, diff)
			}
			if !reflect.DeepEqual(got.Instances, want.Instances) || !reflect.DeepEqual(got.Sandboxes, want.Sandboxes) {
				t.Errorf("%s on %d cores: instances or sandboxes differ from a full decode:\n%s", name, procs,
					cmp.Diff(want.Instances, got.Instances))
			}
			hits += sharedInstances(got.Instances)
			if sharedInstances(want.Instances) != 0 {
				t.Fatalf("%s: a full decode shares sets between blocks; sharedInstances counts nothing", name)
			}
		}
		runtime.GOMAXPROCS(prev)
	}
	if hits < 1000 {
		t.Fatalf("the memo answered for %d instances; it must be taken", hits)
	}
}

// sharedInstances counts the instances of one block each whose Provision
// set another block's instance holds too: what a memo hit hands out.
func sharedInstances(insts []*Instance) int {
	owner := map[uintptr]string{}
	n := 0
	for _, in := range insts {
		if in.Addr.HasKey {
			continue // the instances of a for_each block share by design
		}
		p := reflect.ValueOf(in.Provision).Pointer()
		if name, ok := owner[p]; ok && name != in.Addr.Name {
			n++
			continue
		}
		owner[p] = in.Addr.Name
	}
	return n
}
