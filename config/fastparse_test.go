package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rogpeppe/go-internal/txtar"
)

// checkFast parses src with fastParseConfig and hclsyntax.ParseConfig
// from start and fails unless, whenever the fast parser takes the input,
// hcl reports nothing and builds a body reflect.DeepEqual to the fast
// one. It reports whether the fast parser took the input.
func checkFast(t *testing.T, src []byte, start hcl.Pos) bool {
	t.Helper()
	got, ok := fastParse(src, "main.sbx.hcl", start)
	want, diags := hclsyntax.ParseConfig(src, "main.sbx.hcl", start)
	if !ok {
		if got != nil {
			t.Fatalf("fastParse returned a body with ok=false")
		}
		return false
	}
	if !fastPlausible(src) {
		t.Fatalf("fastPlausible turns away what fastParse takes:\n%s", src)
	}
	if len(diags) > 0 {
		t.Fatalf("fastParseConfig took what hcl reports (%v), from %v:\n%s", diags, start, src)
	}
	if !reflect.DeepEqual(got, want.Body) {
		// Every field, exported or not, in the message.
		diff := cmp.Diff(want.Body, got, cmp.Exporter(func(reflect.Type) bool { return true }))
		t.Fatalf("fastParseConfig built another body than hcl, from %v (-hcl +fast):\n%s\ninput:\n%s", start, diff, src)
	}
	return true
}

// someStarts are where a piece may begin in its file: the file's start,
// a later line (as parseFiles' pieces do) and, for good measure, a
// column past 1.
var someStarts = []hcl.Pos{
	hcl.InitialPos,
	{Line: 40, Column: 1, Byte: 1234},
	{Line: 3, Column: 7, Byte: 20},
}

func TestFastParseCases(t *testing.T) {
	cases := map[string]struct {
		src    string
		wantOK bool
	}{
		"empty":                         {"", true},
		"only newlines":                 {"\n\n\n", true},
		"only spaces":                   {"  \t ", true},
		"comment without newline":       {"# c", true},
		"comments":                      {"# a\n// b\n/* c\nd */\n", true},
		"argument without newline":      {"a = 1", true},
		"argument then comment":         {"a = 1 # c", true},
		"argument then slash comment":   {"a = 1 // c\n", true},
		"comment before":                {"/* x */ a = 1\n", true},
		"comment inside":                {"a = /* x */ 1\n", true},
		"block comment over lines":      {"a = 1 /* x\n y */\nb = 2\n", true},
		"block comment is no newline":   {"a = 1 /* x\n */ b = 2\n", false},
		"nested blocks":                 {"a \"b\" c {\n  d {\n    e = [1, 2.5, true, false, null]\n  }\n\n  f \"g\" {\n  }\n}\n", true},
		"bare labels":                   {"a b c {\n}\n", true},
		"block at the end":              {"a {\n}", true},
		"block then comment":            {"a {\n} # c\nb {\n}\n", true},
		"block then argument":           {"a {\n} b = 1\n", false},
		"empty one-line block":          {"x {}\ny \"z\" {}\n", true},
		"one-line block":                {"x { a = 1 }\ny \"z\" { b = [\"c\"] }\n", true},
		"one-line block of two":         {"x { a = 1, b = 2 }\n", false},
		"one-line block unclosed":       {"x { a = 1\n}\n", false},
		"one-line block of a block":     {"x { y {} }\n", false},
		"empty tuple and object":        {"a = []\nb = {}\nc = [\n]\nd = {\n\n}\n", true},
		"trailing commas":               {"a = [\n  1,\n  2,\n]\nb = { x = 1, }\n", true},
		"object forms":                  {"a = {\n  \"k\" : \"v\"\n  k2 = x.y.z\n  # c\n  k3 = {} // d\n  k4 = { a = [1], b = { c = true } }, k5 = 5\n}\n", true},
		"object keys":                   {"a = { true = 1, null: 2, 3 = 4, \"\" = 5, x.y = 6 }\n", true},
		"object item on open line":      {"a = { b = 1\n  c = 2 }\n", true},
		"object items without comma":    {"a = { a = 1 b = 2 }\n", false},
		"object key on its own":         {"a = {\n  b\n  = 1\n}\n", false},
		"tuple of objects":              {"a = [{ b = 1 }, {\n  c = 2\n}]\n", true},
		"comments in a tuple":           {"a = [ # c\n  1, // d\n  /* e */ 2\n]\n", true},
		"traversal over lines in tuple": {"a = [x\n.y\n.z]\n", true},
		"traversal over a newline":      {"a = x\n.y\n", false},
		"dashes":                        {"a-b = x-y.z-\n", true},
		"tabs":                          {"a\t=\t\"x\ty\"\n\tb {\n\t}\n", true},
		"escapes":                       {"a = \"q\\\"\\\\\\n\\t\\r.\"\nb \"\\\"\" {\n}\n", true},
		"unknown escape":                {`a = "\u00e9"`, false},
		"bad escape":                    {`a = "\q"`, false},
		"dollar and percent":            {"a = \"50% $5 $\"\nb = \"%\"\nc = \"$\"\n", true},
		"empty strings":                 {"a = \"\"\nb \"\" {\n}\n", true},
		"interpolation":                 {`a = "${x}"`, false},
		"escaped interpolation":         {`a = "$${x}"`, false},
		"directive":                     {`a = "%{if x}y%{endif}"`, false},
		"escaped directive":             {`a = "%%{x}"`, false},
		"interpolated label":            {"a \"${b}\" {\n}\n", false},
		"string over lines":             {"a = \"x\ny\"\n", false},
		"unterminated string":           {`a = "x`, false},
		"unicode string":                {"a = \"é\"\n", false},
		"unicode comment":               {"# é\na = 1\n", false},
		"unicode identifier":            {"é = 1\n", false},
		"byte order mark":               {"\ufeffa = 1\n", false},
		"carriage return":               {"a = 1\r\n", false},
		"nul":                           {"a = \"\x00\"\n", false},
		"heredoc":                       {"a = <<EOT\nx\nEOT\n", false},
		"function call":                 {"a = f(1)\n", false},
		"namespaced call":               {"a = p::f(1)\n", false},
		"operator":                      {"a = 1 + 2\n", false},
		"comparison":                    {"a = b == c\n", false},
		"negative":                      {"a = -1\n", false},
		"not":                           {"a = !b\n", false},
		"conditional":                   {"a = b ? c : d\n", false},
		"index":                         {"a = x[0]\n", false},
		"string index":                  {"a = x[\"k\"]\n", false},
		"splat":                         {"a = x[*].y\n", false},
		"attribute splat":               {"a = x.*.y\n", false},
		"legacy index":                  {"a = x.0\n", false},
		"literal traversal":             {"a = true.x\n", false},
		"tuple index":                   {"a = [1][0]\n", false},
		"parentheses":                   {"a = (1)\n", false},
		"parenthesized key":             {"a = { (k) = 1 }\n", false},
		"for tuple":                     {"a = [for x in y : x]\n", false},
		"for object":                    {"a = {for k, v in m : k => v}\n", false},
		"for as a key":                  {"a = { for = 1 }\n", false},
		"for on the next line":          {"a = {\n  for = 1\n}\n", false},
		"for later in an object":        {"a = { b = 1, for = 2 }\n", true},
		"ellipsis":                      {"a = f(x...)\n", false},
		"numbers":                       {"a = 1.5\nb = 007\nc = 0\nd = 123456789012345678901234567890\n", true},
		"exponent":                      {"a = 1e5\n", false},
		"two dots":                      {"a = 1.2.3\n", false},
		"number then dot":               {"a = 1.\n", false},
		"argument set twice":            {"a = 1\na = 2\n", false},
		"argument set twice in a block": {"b {\n  a = 1\n  a = 2\n}\n", false},
		"equals equals":                 {"a == 1\n", false},
		"quoted argument name":          {"\"a\" = 1\n", false},
		"block on two lines":            {"a\n{\n}\n", false},
		"block with equals":             {"a = {\n}\nb \"c\" = {\n}\n", false},
		"unclosed tuple":                {"a = [1,\n", false},
		"unclosed block":                {"a {\n", false},
		"stray brace":                   {"}\n", false},
		"missing value":                 {"a =\n", false},
		"comma after argument":          {"a = 1,\n", false},
		"unterminated comment":          {"/* x", false},
		"semicolon":                     {"a = 1;\n", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, start := range someStarts {
				if ok := checkFast(t, []byte(tc.src), start); ok != tc.wantOK {
					t.Fatalf("from %v: ok = %v, want %v", start, ok, tc.wantOK)
				}
			}
		})
	}
}

// TestFastPlausibleTurnsAway: what is plainly outside the subset is
// turned away before anything is built (checkFast holds it to never
// turning away what fastParse takes).
func TestFastPlausibleTurnsAway(t *testing.T) {
	for _, src := range []string{
		"a = b == c\n", "a = b ? c : d\n", "a = f(x)\n", "a = x[0]\n", "a = [x\n][0]\n",
		"a = \"${x}\"\n", "a = \"%{if x}%{endif}\"\n", "a = \"\\u00e9\"\n", "a = 1 + 2\n", "a = -1\n",
		"a = !b\n", "a = <<EOT\nx\nEOT\n", "a = x.*.y\n", "a = 4 / 2\n", "a = \"é\"\n", "a = 1\r\n",
		"a = { for k, v in m : k => v }\n", "a = p::f()\n",
	} {
		if fastPlausible([]byte(src)) {
			t.Errorf("fastPlausible(%q) = true", src)
		}
	}
}

// corpus is every HCL file in the repository: the fixtures, the
// examples, the scripts' configurations and each .hcl file of the CLI's
// txtar scenarios.
func corpus(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed during the walk, by a test beside this one
			}
			return err
		}
		// Hidden directories hold no tracked HCL, only what runs beside
		// the tests: .git, and .kube, whose cluster writes and removes
		// files while the walk reads them.
		if d.IsDir() && path != ".." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		switch {
		case strings.HasSuffix(path, ".hcl"):
			src, err := os.ReadFile(path)
			out[path] = src
			return err
		case strings.HasSuffix(path, ".txtar"):
			a, err := txtar.ParseFile(path)
			if err != nil {
				return err
			}
			for _, f := range a.Files {
				if strings.HasSuffix(f.Name, ".hcl") {
					out[path+":"+f.Name] = f.Data
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFastParseCorpus compares the two parsers on every HCL file of the
// repository, whole and in the pieces parseFiles cuts.
func TestFastParseCorpus(t *testing.T) {
	files := corpus(t)
	if len(files) < 50 {
		t.Fatalf("found only %d HCL files", len(files))
	}
	took := 0
	for name, src := range files {
		if checkFast(t, src, hcl.InitialPos) {
			took++
		}
		for _, size := range []int{1, 64, parseChunkSize} {
			p := newChunkedParse(src, name, size)
			for _, c := range p.chunks {
				checkFast(t, src[c.start:c.end], c.pos)
			}
		}
	}
	t.Logf("the fast parser took %d of %d files", took, len(files))
	// Most configurations are plain: a fast path that gave up on them
	// would be a slower parse than hcl's alone.
	if took*2 < len(files) {
		t.Errorf("the fast parser took only %d of %d files", took, len(files))
	}
	for _, name := range []string{"../examples/quickstart/main.sbx.hcl", "../config/testdata/valid/multi_file/b_sandboxes.sbx.hcl"} {
		if !checkFast(t, files[name], hcl.InitialPos) {
			t.Errorf("the fast parser did not take %s", name)
		}
	}
}

// TestFastParseWorkloads: the benchmarks' configurations (the CLI's
// BenchmarkPlan1000 and scripts/benchplan write manySandboxes' shape)
// are parsed identically, and those in the subset are all taken, in
// every piece.
func TestFastParseWorkloads(t *testing.T) {
	cases := map[string]struct {
		src     []byte
		wantAll bool
	}{
		"manySandboxes": {manySandboxes(1000), true},
		"manyKeys":      {manyKeys(100), true},
		"manyLocals":    {manyLocals(300), true},
		"manyBlocks":    {manyBlocks(30), false}, // toset(...), an index
		"forEachSet":    {forEachSet(30), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if ok := checkFast(t, tc.src, hcl.InitialPos); ok != tc.wantAll {
				t.Errorf("whole file: ok = %v, want %v", ok, tc.wantAll)
			}
			p := newChunkedParse(tc.src, "main.sbx.hcl", parseChunkSize)
			if name == "manySandboxes" && len(p.chunks) < 2 {
				t.Fatalf("%d pieces", len(p.chunks)) // the pieces are what parseFiles parses
			}
			for i, c := range p.chunks {
				if ok := checkFast(t, tc.src[c.start:c.end], c.pos); tc.wantAll && !ok {
					t.Fatalf("piece %d (from %v) not taken", i, c.pos)
				}
			}
		})
	}
}

// TestFastParseChunkFile: the file parseChunk builds on the fast path is
// the one hclsyntax.ParseConfig returns, Bytes and Nav included.
func TestFastParseChunkFile(t *testing.T) {
	src := manySandboxes(40)
	for _, size := range []int{len(src), parseChunkSize} {
		p := newChunkedParse(src, "main.sbx.hcl", size)
		for i, c := range p.chunks {
			p.parseChunk(i)
			got := p.chunks[i].file
			if _, fast := got.Nav.(*lazyNav); !fast {
				t.Fatalf("piece %d of %d was not parsed on the fast path", i, len(p.chunks))
			}
			want, _ := hclsyntax.ParseConfig(src[c.start:c.end], "main.sbx.hcl", c.pos)
			if !reflect.DeepEqual(got.Body, want.Body) || !reflect.DeepEqual(got.Bytes, want.Bytes) || &got.Bytes[0] != &want.Bytes[0] {
				t.Fatalf("piece %d: file differs from hcl's", i)
			}
			type nav interface{ ContextString(int) string }
			for off := c.start; off <= c.end; off++ {
				if g, w := got.Nav.(nav).ContextString(off), want.Nav.(nav).ContextString(off); g != w {
					t.Fatalf("piece %d: ContextString(%d) = %q, want %q", i, off, g, w)
				}
			}
		}
	}
}

// FuzzFastParse: whatever the input and wherever it starts, the fast
// parser builds hcl's body or declines.
func FuzzFastParse(f *testing.F) {
	for _, src := range corpus(f) {
		f.Add(src, uint8(0), uint8(0), uint8(0))
	}
	for _, src := range trickyInputs() {
		f.Add([]byte(src), uint8(0), uint8(0), uint8(0))
	}
	f.Add(manySandboxes(3), uint8(9), uint8(0), uint8(200))
	f.Fuzz(func(t *testing.T, src []byte, line, column, offset uint8) {
		checkFast(t, src, hcl.Pos{Line: 1 + int(line), Column: 1 + int(column), Byte: int(offset)})
	})
}

// BenchmarkFastParse1000 is BenchmarkParse1000's file through the fast
// parser alone, whole and on one core.
func BenchmarkFastParse1000(b *testing.B) {
	src := manySandboxes(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := fastParseConfig(src, "main.sbx.hcl", hcl.InitialPos); !ok {
			b.Fatal("not taken")
		}
	}
}
