package testenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// SourceVersion is the Version constant of the CLI in this source tree,
// for tests of what is built from it (the image, the chart's
// appVersion). The CLI's package is internal to cmd/sandboxer, so it is
// read from its file.
func SourceVersion(tb testing.TB) string {
	tb.Helper()
	file := filepath.Join(repoRoot(), "cmd", "sandboxer", "internal", "cli", "factory.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs, ok := s.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, n := range vs.Names {
				if n.Name != "Version" || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						return v
					}
				}
			}
		}
	}
	tb.Fatalf("no const Version in %s", file)
	return ""
}
