package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// blockContent must give exactly what Content gives, diagnostics
// included, for every block of every fixture against every block schema
// (most pairs mismatch, so both paths are taken).
func TestBlockContentIsContent(t *testing.T) {
	schemas := map[string]*hcl.BodySchema{
		"sandbox": sandboxBlockSchema, "project": projectBlockSchema, "provider": providerBlockSchema,
		"image": imageBlockSchema, "output": outputBlockSchema, "pool": poolBlockSchema,
		"profile": profileBlockSchema, "variable": variableBlockSchema, "validation": validationBlockSchema,
		"kubernetes": kubernetesBlockSchema,
		"required":   {Attributes: []hcl.AttributeSchema{{Name: "project", Required: true}, {Name: "ttl"}}},
		"labelled":   {Attributes: []hcl.AttributeSchema{{Name: "project"}}, Blocks: []hcl.BlockHeaderSchema{{Type: "pool", LabelNames: []string{"name"}}, {Type: "seed"}}},
	}
	var files []string
	filepath.WalkDir("testdata", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".hcl" {
			files = append(files, path)
		}
		return nil
	})
	sources := map[string][]byte{"many.sbx.hcl": manySandboxes(50), "blocks.sbx.hcl": manyBlocks(20), "keys.sbx.hcl": manyKeys(20),
		// Blocks with too few and too many labels for the schema "labelled".
		"labels.sbx.hcl": []byte("sandbox \"s\" {\n  project = project.p\n  pool {\n    size = 2\n  }\n  seed \"x\" {\n  }\n  pool \"a\" {\n  }\n}\n")}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources[f] = b
	}
	if len(sources) < 20 {
		t.Fatalf("only %d sources; the check would be vacuous", len(sources))
	}
	fast, checked := 0, 0
	var walk func(body *hclsyntax.Body)
	walk = func(body *hclsyntax.Body) {
		for _, blk := range body.Blocks {
			for name, schema := range schemas {
				want, wantDiags := blk.Body.Content(schema)
				got, gotDiags := blockContent(blk.Body, schema)
				// Content reports unsupported arguments in map order.
				sortDiags(gotDiags)
				sortDiags(wantDiags)
				if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotDiags, wantDiags) {
					t.Errorf("%s: block %s at %s, schema %s: blockContent differs from Content\n got %#v %v\nwant %#v %v",
						blk.Body.SrcRange.Filename, blk.Type, blk.TypeRange, name, got, gotDiags, want, wantDiags)
				}
				checked++
				if fitsSchema(blk.Body, schema) {
					fast++
				}
			}
			walk(blk.Body)
		}
	}
	for name, src := range sources {
		f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		if diags.HasErrors() {
			continue // the invalid fixtures hcl cannot parse
		}
		walk(f.Body.(*hclsyntax.Body))
	}
	if fast == 0 || fast == checked {
		t.Fatalf("%d of %d checks took the fast path; both paths must be taken", fast, checked)
	}
}

func sortDiags(d hcl.Diagnostics) {
	slices.SortFunc(d, func(a, b *hcl.Diagnostic) int { return strings.Compare(a.Error(), b.Error()) })
}
