package config

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

// loadSequential loads with one core, so predecodeSandboxes stays out.
func loadSequential(t *testing.T, src []byte) (*Config, string) {
	t.Helper()
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	cfg, diags := LoadSources("", map[string][]byte{"main.sbx.hcl": src}, Input{}, DefaultCatalog())
	return cfg, diagText(diags)
}

// diagText is every diagnostic in full, one a line.
func diagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%d %v: %s; %s\n", d.Severity, d.Subject, d.Summary, d.Detail)
	}
	return b.String()
}

// TestPredecodeMatchesSequential: decoding literal sandbox blocks on
// several cores gives the instances, sandboxes and diagnostics (in the
// same order) of a decode on one.
func TestPredecodeMatchesSequential(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(1)
	}
	var mixed strings.Builder
	mixed.Write(manySandboxes(200))
	for i := range 100 {
		switch i % 10 {
		case 0: // a duplicate of a block above
			fmt.Fprintf(&mixed, "sandbox \"s%04d\" {\n  project = project.p00\n}\n", i)
		case 1:
			fmt.Fprintf(&mixed, "sandbox \"bad name %d\" {\n  project = project.p00\n}\n", i)
		case 2:
			fmt.Fprintf(&mixed, "sandbox \"x%03d\" {\n  project    = project.p01\n  extensions = { postgres = [\"plpython3u\"] }\n}\n", i)
		case 3:
			fmt.Fprintf(&mixed, "sandbox \"x%03d\" {\n  project = project.nope\n  ttl     = \"1s\"\n}\n", i)
		case 4: // not literal: decoded in order on the main goroutine
			fmt.Fprintf(&mixed, "sandbox \"x%03d\" {\n  project  = project.p02\n  services = project.p02.services\n}\n", i)
		case 5:
			fmt.Fprintf(&mixed, "sandbox \"x%03d\" {\n  project  = project.p03\n  services = [\"mongodb\"]\n  unknown  = 1\n}\n", i)
		case 6:
			fmt.Fprintf(&mixed, "sandbox \"x%03d\" {\n  project  = project.p04\n  for_each = toset([\"a\", \"b\"])\n}\n", i)
		default:
			fmt.Fprintf(&mixed, "sandbox \"x%03d\" {\n  project   = project.p05\n  on_demand = %v\n  database  = \"db_%d\"\n  ttl       = \"%dh\"\n}\n", i, i%2 == 0, i, 1+i%5)
		}
	}
	for name, src := range map[string][]byte{
		"literal blocks": manySandboxes(1000),
		"mixed":          []byte(mixed.String()),
	} {
		t.Run(name, func(t *testing.T) {
			want, wantDiags := loadSequential(t, src)
			got, gotDiags := LoadSources("", map[string][]byte{"main.sbx.hcl": src}, Input{}, DefaultCatalog())
			if diff := cmp.Diff(wantDiags, diagText(gotDiags)); diff != "" {
				t.Fatalf("diagnostics differ (-one core +several):\n%s", diff)
			}
			if !reflect.DeepEqual(got.Instances, want.Instances) || !reflect.DeepEqual(got.Sandboxes, want.Sandboxes) {
				t.Fatal("instances or sandboxes differ from a decode on one core")
			}
			if len(got.Instances) < 200 {
				t.Fatalf("only %d instances", len(got.Instances))
			}
			if name == "mixed" && strings.Count(wantDiags, "\n") < 40 {
				t.Fatalf("the mixed configuration should report many problems, got: %s", wantDiags)
			}
			literal := 0
			for _, f := range got.Files {
				content, _ := f.Body.Content(fileSchema)
				for _, b := range content.Blocks {
					if b.Type == "sandbox" && literalSandboxBlock(b) {
						literal++
					}
				}
			}
			if literal < minParallelBlocks {
				t.Fatalf("%d literal sandbox blocks: too few to be decoded concurrently", literal)
			}
		})
	}
}
