package ondemand

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The broker is a library, not a renderer: it hands records and results to
// callers, which choose how to show them. It must not import views (or the
// CLI or server) so the server and the Go library can use it alone.
func TestOndemandDoesNotImportRenderers(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"/views", "/server", "/cmd/"} {
				if strings.Contains(path, banned) {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}
