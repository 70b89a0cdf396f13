package sandboxer_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/providers/providertest"
)

// hclBlock is a fenced ```hcl block of a Markdown page.
var hclBlock = regexp.MustCompile("(?s)```hcl\n(.*?)```")

// Every hcl example of README.md and docs/ parses, and every one that
// declares a project or a sandbox loads as a whole configuration without
// an error: the pages cannot drift from the language. A block that only
// shows a piece of a larger configuration says so on its first line
// with a "# fragment" comment; it must still parse.
func TestDocsConfigurationsLoad(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "README.md")
	seen := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range hclBlock.FindAllSubmatch(b, -1) {
			seen++
			src := m[1]
			name := page + "#" + string(rune('1'+i))
			if _, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
				t.Errorf("%s: does not parse: %s", name, diags.Error())
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(string(src)), "# fragment") {
				continue
			}
			if !strings.Contains(string(src), "project \"") && !strings.Contains(string(src), "sandbox \"") {
				continue
			}
			_, diags := config.LoadSources(t.TempDir(), map[string][]byte{"doc.sbx.hcl": src}, config.Input{Environ: []string{}}, config.DefaultCatalog())
			if diags.HasErrors() {
				t.Errorf("%s: does not load: %s", name, diags.Error())
			}
		}
	}
	if seen < 4 {
		t.Fatalf("found only %d hcl blocks; the check would be vacuous", seen)
	}
}

// The Role README.md and docs/kubernetes.md show is the one the RBAC test runs the
// provider under.
func TestDocsRoleIsTheTestedOne(t *testing.T) {
	role, err := os.ReadFile("providers/kubernetes/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"README.md", "docs/kubernetes.md"} {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```yaml\n"+string(role)+"```") {
			t.Errorf("%s does not show providers/kubernetes/role.yaml as it is", page)
		}
	}
}

// The conformance table of docs/conformance.md is the one the recorded
// runs of the provider suite make (providertest.Table over
// providers/providertest/testdata/conformance): a run that passes,
// fails or skips differently, or a service or runtime added, changes the
// table, and the page must follow. SANDBOXER_UPDATE_DOCS=1 rewrites it.
func TestDocsConformanceTable(t *testing.T) {
	const page, begin, end = "docs/conformance.md", "<!-- conformance table: generated -->\n", "<!-- end of the generated table -->\n"
	table, err := providertest.Table(providertest.RecordDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated table between %q and %q", page, begin, end)
	}
	want := doc[:i+len(begin)] + table + doc[j:]
	if want == doc {
		return
	}
	if os.Getenv("SANDBOXER_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(page, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table is not the recorded runs' (SANDBOXER_UPDATE_DOCS=1 go test -run TestDocsConformanceTable . rewrites it):\n%s", page, table)
}
