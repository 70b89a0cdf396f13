package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// checkChunked parses src in pieces of about size bytes and fails unless
// the result is exactly what one hclsyntax.ParseConfig of the whole file
// gives: the same body, the same diagnostics. It reports whether the
// pieces were joined (rather than the file parsed again whole).
func checkChunked(t *testing.T, src []byte, size int) bool {
	t.Helper()
	want, wantDiags := hclsyntax.ParseConfig(src, "main.sbx.hcl", hcl.InitialPos)
	p := newChunkedParse(src, "main.sbx.hcl", size)
	for i := range p.chunks {
		p.parseChunk(i)
	}
	_, ok := p.join()
	joined := ok && len(p.chunks) > 1
	got, gotDiags := p.result()
	if !reflect.DeepEqual(got.Body, want.Body) {
		t.Fatalf("pieces of %d bytes (joined: %v) parse to another body than the whole file:\n%s", size, joined, src)
	}
	if !reflect.DeepEqual(gotDiags, wantDiags) {
		t.Fatalf("pieces of %d bytes: diagnostics %v, want %v:\n%s", size, gotDiags, wantDiags, src)
	}
	if !reflect.DeepEqual(got.Bytes, want.Bytes) {
		t.Fatalf("pieces of %d bytes: File.Bytes differ", size)
	}
	// hcl's own diagnostic printer asks Nav which block an offset is in.
	type nav interface{ ContextString(int) string }
	for off := range len(src) + 1 {
		if g, w := got.Nav.(nav).ContextString(off), want.Nav.(nav).ContextString(off); g != w {
			t.Fatalf("pieces of %d bytes: ContextString(%d) = %q, want %q", size, off, g, w)
		}
	}
	return joined
}

func TestParseChunkedMatchesWholeFile(t *testing.T) {
	cases := map[string]struct {
		src        string
		wantJoined bool
	}{
		"blocks":                           {src: "project \"p\" {\n  services = [\"postgres\"]\n}\n\nsandbox \"a\" {\n  project = project.p\n}\nsandbox \"b\" {\n  project = project.p\n}\n", wantJoined: true},
		"bom":                              {src: "\ufeffproject \"p\" {\n  services = [\"postgres\"]\n}\nsandbox \"a\" {\n  project = project.p\n}\n", wantJoined: true},
		"comments between":                 {src: "# one\nproject \"p\" {\n}\n/* two\n*/\n// three\nsandbox \"a\" {\n}\n# end", wantJoined: true},
		"crlf before the brace":            {src: "locals {\r\n  a = 1\r\n}\nlocals {\r\n  b = 2\r\n}\n", wantJoined: true},
		"top-level arguments":              {src: "a = {\n}\nb = 2\nlocals {\n}\n", wantJoined: false},
		"object value then block":          {src: "locals {\n}\na = {\n}\nlocals {\n}\n", wantJoined: false},
		"argument set twice":               {src: "locals {\n}\na = 1\nlocals {\n}\na = 2\n", wantJoined: false},
		"heredoc holding a brace line":     {src: "locals {\n  x = <<EOT\n}\nsandbox \"b\" {\n}\nEOT\n}\nlocals {\n}\n", wantJoined: false},
		"indented heredoc":                 {src: "locals {\n  x = <<-EOT\n    a\n}\nEOT\n}\nlocals {\n}\n", wantJoined: false},
		"comment holding a brace line":     {src: "/*\n}\nsandbox \"b\" {\n}\n*/\nlocals {\n}\n", wantJoined: false},
		"nested block closed at column 1":  {src: "provider \"docker\" {\n  image \"postgres\" {\n}\n  x = 1\n}\nlocals {\n}\n", wantJoined: false},
		"object closed at column 1":        {src: "locals {\n  x = {\n}\n  y = 1\n}\nlocals {\n}\n", wantJoined: false},
		"interpolation closed at column 1": {src: "locals {\n  x = \"${upper(\"a\"\n}\"\n}\nlocals {\n}\n", wantJoined: false},
		"for expression":                   {src: "locals {\n  x = [for k in [1] :\n}\n]\n}\nlocals {\n}\n", wantJoined: false},
		"syntax error in a later piece":    {src: "locals {\n}\nlocals {\n  x = \n}\n", wantJoined: false},
		"unclosed last block":              {src: "locals {\n}\nlocals {\n  x = 1\n", wantJoined: false},
		"empty":                            {src: "", wantJoined: false},
		"only newlines":                    {src: "\n\n\n", wantJoined: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Size 1 cuts at every candidate line.
			if joined := checkChunked(t, []byte(tc.src), 1); joined != tc.wantJoined {
				t.Errorf("joined = %v, want %v", joined, tc.wantJoined)
			}
		})
	}
}

// TestParseChunkedFixtures cuts every fixture, valid or not, at every
// candidate line and at a few kilobytes.
func TestParseChunkedFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "*", "*"+FileSuffix))
	if err != nil || len(paths) == 0 {
		t.Fatal(paths, err)
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimPrefix(path, "testdata/"), func(t *testing.T) {
			for _, size := range []int{1, 64, 512, parseChunkSize} {
				checkChunked(t, src, size)
			}
		})
	}
	big := manySandboxes(1000)
	if !checkChunked(t, big, parseChunkSize) {
		t.Fatal("1,000 literal sandbox blocks were parsed whole, not in pieces")
	}
}

// TestParseFilesKeepsOrder: several files, each in pieces, come back in
// the order of their names with their own diagnostics.
func TestParseFilesKeepsOrder(t *testing.T) {
	sources := map[string][]byte{
		"a.sbx.hcl": manySandboxes(200),
		"b.sbx.hcl": []byte("locals {\n  x = \n}\n"),
		"c.sbx.hcl": manySandboxes(300),
	}
	names := []string{"a.sbx.hcl", "b.sbx.hcl", "c.sbx.hcl"}
	files, diags := parseFiles(names, sources)
	for i, name := range names {
		want, wantDiags := hclsyntax.ParseConfig(sources[name], name, hcl.InitialPos)
		if !reflect.DeepEqual(files[i].Body, want.Body) || !reflect.DeepEqual(diags[i], wantDiags) {
			t.Errorf("%s: parsed in pieces differs from parsed whole", name)
		}
	}
	if !diags[1].HasErrors() || diags[0].HasErrors() || diags[2].HasErrors() {
		t.Errorf("diagnostics went to the wrong file: %v", diags)
	}
}

// FuzzParseChunked: however a file is cut, the pieces join into exactly
// the whole file's parse, or are not used.
func FuzzParseChunked(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "*", "*"+FileSuffix))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, src := range trickyInputs() {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkChunked(t, src, 1)
	})
}
