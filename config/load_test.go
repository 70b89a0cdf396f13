package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadReadsOnlyConfigFilesInDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("b.sbx.hcl", `project "p" { services = ["postgres"] }`)
	write("a.sbx.hcl", `sandbox "s" { project = project.p }`)
	write("notes.hcl", `this is not parsed`)
	write("sub/c.sbx.hcl", `this is not parsed either`)

	cfg, diags := Load(dir, Input{}, DefaultCatalog())
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", describeAll(diags))
	}
	var names []string
	for name := range cfg.Sources {
		names = append(names, name)
	}
	if diff := cmp.Diff([]string{"a.sbx.hcl", "b.sbx.hcl"}, SortedUnique(names)); diff != "" {
		t.Errorf("Sources (-want +got):\n%s", diff)
	}
	if len(cfg.Files) != 2 || cfg.Dir != dir {
		t.Errorf("Files = %d entries, Dir = %q", len(cfg.Files), cfg.Dir)
	}
}

// TestLoadFailureKeepsSources checks that a failed load still hands back
// what the CLI needs to render the diagnostics, with relative file names.
func TestLoadFailureKeepsSources(t *testing.T) {
	dir := t.TempDir()
	src := "project \"p\" {\n  services = [\"mongodb\"]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(dir, Input{}, DefaultCatalog())
	if !diags.HasErrors() {
		t.Fatal("want an error")
	}
	if cfg == nil || string(cfg.Sources["main.sbx.hcl"]) != src || cfg.Files["main.sbx.hcl"] == nil {
		t.Fatalf("failed Load did not keep sources and files: %+v", cfg)
	}
	if got := diags[0].Subject.String(); got != "main.sbx.hcl:2,15-24" {
		t.Errorf("subject = %s, want main.sbx.hcl:2,15-24", got)
	}
	var unknown *UnknownServiceError
	if err, ok := diags[0].Extra.(error); !ok || !errors.As(err, &unknown) || unknown.Service != "mongodb" {
		t.Errorf("Extra = %#v, want *UnknownServiceError for mongodb", diags[0].Extra)
	}
}

func TestLoadNoFiles(t *testing.T) {
	cfg, diags := Load(t.TempDir(), Input{}, DefaultCatalog())
	if !diags.HasErrors() || diags[0].Summary != "No configuration files" {
		t.Fatalf("diags = %v, want No configuration files", diags)
	}
	if cfg == nil {
		t.Fatal("nil Config")
	}
	_, diags = Load(filepath.Join(t.TempDir(), "missing"), Input{}, DefaultCatalog())
	if !diags.HasErrors() || diags[0].Summary != "Failed to read configuration directory" {
		t.Fatalf("diags = %v, want Failed to read configuration directory", diags)
	}
}
