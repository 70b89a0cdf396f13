package sandboxer_test

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sandboxer/sandboxer"

// The dependency rules of the repository, checked on the packages' own
// (non-test) imports. Each says why in its message.
func TestImportBoundaries(t *testing.T) {
	imports := packageImports(t)
	rules := []struct {
		why     string
		applies func(pkg string) bool
		forbids func(imp string) bool
	}{
		{"only the CLI renders: nothing outside cmd/ imports internal/views",
			func(p string) bool { return !strings.HasPrefix(p, "cmd/") },
			is("internal/views")},
		{"nothing imports the CLI",
			func(p string) bool { return true },
			func(i string) bool {
				return strings.HasPrefix(i, "cmd/") && i != "cmd/sandboxer/internal/cli" || i == "cmd/sandboxer"
			}},
		{"config decodes the language and never touches state",
			is("config"), is("state")},
		{"state keeps records and never calls a provider, the planner or the engine",
			is("state"), anyOf("apply", "plan", "ondemand", "snapshot", "providers/")},
		{"plan is pure data: no apply, providers or on-demand",
			is("plan"), anyOf("apply", "ondemand", "snapshot", "providers/")},
		{"the wire types stand alone, so API clients pull in nothing else",
			anyOf("api", "apiclient"), func(i string) bool { return i != "api" }},
		{"orchestration talks to apply.Provider: only the composition root (package sandboxer) names a concrete runtime",
			func(p string) bool {
				return anyOf("apply", "ondemand", "snapshot", "internal/server", "internal/dashboard", "internal/views", "internal/plugin", "plan", "config", "state", "cmd/")(p) &&
					p != "cmd/sandboxer-kubernetes" // the runtime's own program
			},
			func(i string) bool { return strings.HasPrefix(i, "providers/") }},
		{"the kubernetes runtime runs in its own program: the library reaches it through internal/plugin",
			func(p string) bool {
				return p != "cmd/sandboxer-kubernetes" && !strings.HasPrefix(p, "providers/kubernetes")
			},
			anyOf("providers/kubernetes", "providers/kubernetes/")},
		{"the front ends call the library, not the broker, reaper or janitor behind it",
			anyOf("internal/server", "internal/mcpserver", "sandboxertest", "cmd/sandboxer/internal/cli", "internal/dashboard"), anyOf("ondemand")},
		{"the HTTP server maps the library's codes; it runs nothing itself",
			anyOf("internal/server", "internal/mcpserver"), anyOf("apply", "snapshot", "state")},
		{"the dashboard only reads: the library's list and pool levels, and the events it is sent; it never acts on a sandbox",
			is("internal/dashboard"), anyOf("apply", "snapshot", "state", "rotate", "databases", "providers/", "internal/server", "internal/mcpserver")},
		{"the tenants file is serve's input: it knows the library's Tenant, never the broker, state or a runtime",
			is("internal/tenants"), anyOf("ondemand", "state", "apply", "snapshot")},
		{"kubeauth only verifies ServiceAccount tokens with the API server: which tenant one is, is the tenants file's to say",
			is("internal/kubeauth"), func(string) bool { return true }},
		{"runtimes do not know each other; what they do alike is their shared kit's (providers/internal/)",
			func(p string) bool { return strings.HasPrefix(p, "providers/") && p != "providers/providertest" },
			func(i string) bool {
				return strings.HasPrefix(i, "providers/") && !strings.HasPrefix(i, "providers/internal/")
			}},
		{"the runtimes' kit serves every runtime, so it names none",
			anyOf("providers/internal/"), func(i string) bool { return strings.HasPrefix(i, "providers/") }},
	}
	for pkg, imps := range imports {
		for _, r := range rules {
			if !r.applies(pkg) {
				continue
			}
			for _, imp := range imps {
				if sameRuntime(pkg, imp) {
					continue // a runtime's own subpackages
				}
				if r.forbids(imp) {
					t.Errorf("%s imports %s: %s", pkg, imp, r.why)
				}
			}
		}
	}
	// Within package sandboxer, one file is the composition root.
	rootImports(t, func(file, imp string) {
		if strings.HasPrefix(imp, "providers/") && file != "compose.go" {
			t.Errorf("%s imports %s: only compose.go, the composition root, names a concrete runtime", file, imp)
		}
	})
}

// sameRuntime reports whether pkg and imp are parts of one runtime
// (providers/kubernetes and providers/kubernetes/internal/kubeclient).
func sameRuntime(pkg, imp string) bool {
	root := func(p string) string {
		parts := strings.SplitN(p, "/", 3)
		if len(parts) < 2 || parts[0] != "providers" {
			return ""
		}
		return parts[0] + "/" + parts[1]
	}
	return root(pkg) != "" && root(pkg) == root(imp)
}

// The sandboxer binary links nothing of client-go: Go initialises every
// linked package at start, and the kubernetes runtime's libraries cost
// every command (a plan of Docker sandboxes included) about 9 ms and
// 9 MiB here, so the runtime runs in sandboxer-kubernetes
// (internal/plugin). That program in turn must not link client-go's full
// clientset, which registers every API group there is (15–40 ms and about
// 12 MiB more); it uses its own clientset of the groups it needs
// (providers/kubernetes/internal/kubeclient).
func TestBinaryLinksNoKubernetes(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	for _, dep := range deps("./cmd/sandboxer") {
		if strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, "sigs.k8s.io/") || dep == module+"/providers/kubernetes" {
			t.Errorf("cmd/sandboxer links %s", dep)
		}
	}
	kube := deps("./cmd/sandboxer-kubernetes")
	if !slices.Contains(kube, module+"/providers/kubernetes") {
		t.Fatalf("cmd/sandboxer-kubernetes does not link the kubernetes runtime; the check would be vacuous")
	}
	for _, dep := range kube {
		if dep == "k8s.io/client-go/kubernetes" || dep == "k8s.io/client-go/kubernetes/scheme" {
			t.Errorf("cmd/sandboxer-kubernetes links %s", dep)
		}
	}
}

// packageImports maps each package of the module (relative path, "" for
// the root) to the module packages it imports.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := rel(f[0])
		m[pkg] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				m[pkg] = append(m[pkg], rel(imp))
			}
		}
	}
	if len(m) < 10 {
		t.Fatalf("go list found only %d packages; the check would be vacuous", len(m))
	}
	return m
}

func rootImports(t *testing.T, each func(file, imp string)) {
	t.Helper()
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
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(p, module) {
				each(name, rel(p))
			}
		}
	}
}

func rel(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }

func is(pkg string) func(string) bool { return func(p string) bool { return p == pkg } }

func anyOf(prefixes ...string) func(string) bool {
	return func(p string) bool {
		for _, x := range prefixes {
			if p == x || strings.HasSuffix(x, "/") && strings.HasPrefix(p, x) {
				return true
			}
		}
		return false
	}
}
