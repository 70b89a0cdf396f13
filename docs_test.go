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
