package sandboxer_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/services"
)

// serviceBranchesAllowed are the places, outside services/, that still
// branch on a service's name, with how many branches each has: what is
// left of the redesign of issue 29 ("a service is a value"). The list
// only shrinks: a new branch fails TestServiceNames, and so does an entry
// that no longer has as many branches (strike it, so the list stays true).
// Keys are "file func".
func serviceBranchesAllowed() map[string]int {
	return map[string]int{
		"providers/docker/create.go create": 1,
	}
}

// A service is a value (docs/layout.md): what differs between services is
// asked of services.Service, so a runtime, the planner or the library
// never switches on a service's name. This counts, in every non-test Go
// file outside services/, the switch cases and the == / != comparisons
// against a service's name (the catalogue's names as string literals, and
// the Name constant of a services/* package), and the type switches and
// assertions on a services/* package's types.
func TestServiceNames(t *testing.T) {
	names := catalogueNames(t)
	allowedBranches := serviceBranchesAllowed()
	found := map[string][]string{} // "file func" → positions
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || path == "services") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, b := range serviceBranches(fset, f, names) {
			key := filepath.ToSlash(path) + " " + b.fn
			found[key] = append(found[key], b.pos)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, key := range slices.Sorted(maps.Keys(found)) {
		total += len(found[key])
		if allowed := allowedBranches[key]; len(found[key]) > allowed {
			t.Errorf("%s branches on a service's name %d times (allowed %d): %s; ask services.Service instead",
				key, len(found[key]), allowed, strings.Join(found[key], ", "))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(allowedBranches)) {
		if n := len(found[key]); n < allowedBranches[key] {
			t.Errorf("%s now has %d branches on a service's name, fewer than the %d allowed: shrink serviceBranchesAllowed", key, n, allowedBranches[key])
		}
	}
	t.Logf("%d branches on a service's name outside services/ in %d places", total, len(found))
}

// The counter finds what it is meant to find, and leaves the state
// backend's type and URL schemes alone.
func TestServiceNamesDetector(t *testing.T) {
	src := `package x

import pgsvc "github.com/sandboxer/sandboxer/services/postgres"
import "github.com/sandboxer/sandboxer/services/redis"

func a(svc string) {
	switch svc {
	case "postgres", "redis":
	case "other":
	}
	if svc == pgsvc.Name || redis.Name != svc {
	}
}

func c(s any) bool {
	switch s.(type) {
	case pgsvc.Service, *redis.Data:
	}
	_, ok := s.(pgsvc.Service)
	return ok
}

func (r *T) b(decl D, u U) bool {
	switch decl.Type {
	case "postgres":
	}
	return decl.Type == "postgres" || u.Scheme == "postgres" || r.Credentials["postgres"].Port == 1
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range serviceBranches(fset, f, []string{"postgres", "redis"}) {
		got = append(got, b.fn+"@"+b.pos)
	}
	want := []string{"a@x.go:8", "a@x.go:8", "a@x.go:11", "a@x.go:11", "c@x.go:17", "c@x.go:17", "c@x.go:19"}
	if !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
}

func catalogueNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, s := range services.All() {
		names = append(names, s.Name())
	}
	if !slices.Contains(names, "postgres") || !slices.Contains(names, "redis") {
		t.Fatalf("services.All() names %v: the count would be vacuous", names)
	}
	return names
}

type serviceBranch struct{ fn, pos string }

// serviceBranches lists f's branches on a service name.
func serviceBranches(fset *token.FileSet, f *ast.File, names []string) []serviceBranch {
	// The local names of the services/* packages this file imports
	// (services/contract, the shapes they share, is none).
	svcPkgs := map[string]bool{}
	for _, spec := range f.Imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		if !strings.HasPrefix(p, module+"/services/") || p == module+"/services/contract" {
			continue
		}
		local := p[strings.LastIndex(p, "/")+1:]
		if spec.Name != nil {
			local = spec.Name.Name
		}
		svcPkgs[local] = true
	}
	isName := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return e.Kind == token.STRING && err == nil && slices.Contains(names, s)
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && e.Sel.Name == "Name" && svcPkgs[x.Name]
		}
		return false
	}
	// A type of a service's own package, as a type switch or assertion
	// would tell one service from another.
	isServiceType := func(e ast.Expr) bool {
		if st, ok := e.(*ast.StarExpr); ok {
			e = st.X
		}
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := s.X.(*ast.Ident)
		return ok && svcPkgs[x.Name]
	}
	// Not a service: the state backend's type (config.BackendDecl.Type,
	// the root's backendRecord.Type) and a URL's scheme.
	notService := func(e ast.Expr) bool {
		s, ok := e.(*ast.SelectorExpr)
		return ok && (s.Sel.Name == "Type" || s.Sel.Name == "Scheme")
	}
	var out []serviceBranch
	for _, decl := range f.Decls {
		fn := "(top level)"
		if fd, ok := decl.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		add := func(n ast.Node) {
			p := fset.Position(n.Pos())
			out = append(out, serviceBranch{fn: fn, pos: fmt.Sprintf("%s:%d", filepath.ToSlash(p.Filename), p.Line)})
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SwitchStmt:
				if n.Tag == nil || notService(n.Tag) {
					return true
				}
				for _, s := range n.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						if isName(e) {
							add(e)
						}
					}
				}
			case *ast.TypeSwitchStmt:
				for _, s := range n.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						if isServiceType(e) {
							add(e)
						}
					}
				}
			case *ast.TypeAssertExpr:
				if n.Type != nil && isServiceType(n.Type) {
					add(n)
				}
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					return true
				}
				if isName(n.X) && !notService(n.Y) || isName(n.Y) && !notService(n.X) {
					add(n)
				}
			}
			return true
		})
	}
	return out
}
