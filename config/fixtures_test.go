package config

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestValidFixtures loads every testdata/valid/<case> directory and expects
// no diagnostics at all.
func TestValidFixtures(t *testing.T) {
	for _, dir := range fixtureDirs(t, "testdata/valid") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg, diags := Load(dir, Input{}, DefaultCatalog())
			for _, d := range diags {
				t.Errorf("unexpected diagnostic: %s", describe(d))
			}
			if cfg == nil || len(cfg.Instances) == 0 && len(cfg.Projects) == 0 {
				t.Errorf("fixture decoded to an empty configuration")
			}
		})
	}
}

// TestInvalidFixtures loads every testdata/invalid/<case> directory. Each
// line that should be blamed carries "# ERROR: <summary substring>" (more
// than one marker per line is allowed). Every marker must be matched by an
// error whose Subject starts on that line of that file, and every error
// must match a marker.
func TestInvalidFixtures(t *testing.T) {
	for _, dir := range fixtureDirs(t, "testdata/invalid") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want := expectedErrors(t, dir)
			if len(want) == 0 {
				t.Fatalf("fixture has no # ERROR: markers")
			}
			cfg, diags := Load(dir, Input{}, DefaultCatalog())
			if cfg == nil || cfg.Sources == nil || cfg.Files == nil {
				t.Fatalf("Load returned no sources or files to render diagnostics with")
			}
			matched := make([]bool, len(diags))
			for _, w := range want {
				found := false
				for i, d := range diags {
					if d.Severity == hcl.DiagError && d.Subject != nil &&
						d.Subject.Filename == w.file && d.Subject.Start.Line == w.line &&
						strings.Contains(d.Summary, w.summary) {
						matched[i], found = true, true
					}
				}
				if !found {
					t.Errorf("%s:%d: no error %q; got:\n%s", w.file, w.line, w.summary, describeAll(diags))
				}
			}
			for i, d := range diags {
				if d.Severity == hcl.DiagError && !matched[i] {
					t.Errorf("unexpected error: %s", describe(d))
				}
				if d.Subject != nil && cfg.Files[d.Subject.Filename] == nil {
					t.Errorf("diagnostic blames %q, which is not in Config.Files", d.Subject.Filename)
				}
			}
		})
	}
}

type expectedError struct {
	file    string
	line    int
	summary string
}

func expectedErrors(t *testing.T, dir string) []expectedError {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"+FileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	var out []expectedError
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			parts := strings.Split(line, "# ERROR:")
			for _, p := range parts[1:] {
				out = append(out, expectedError{file: filepath.Base(f), line: i + 1, summary: strings.TrimSpace(p)})
			}
		}
	}
	return out
}

func fixtureDirs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Fatalf("no fixtures under %s", root)
	}
	return dirs
}

func describe(d *hcl.Diagnostic) string {
	where := "(no subject)"
	if d.Subject != nil {
		where = d.Subject.String()
	}
	sev := "error"
	if d.Severity == hcl.DiagWarning {
		sev = "warning"
	}
	return where + ": " + sev + ": " + d.Summary + ": " + d.Detail
}

func describeAll(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString("  " + describe(d) + "\n")
	}
	return b.String()
}
