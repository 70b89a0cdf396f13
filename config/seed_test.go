package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seed_sql files are read at decode time (digest of their content), a
// missing one is a diagnostic on its list element, a sandbox's seed wins
// over its project's, and carry_data is read.
func TestSeedAndCarryDecode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("db/a.sql", "CREATE TABLE a (x int);\n")
	write("main.sbx.hcl", `
project "p" {
  services      = ["postgres"]
  seed_snapshot = "fixtures"
}
sandbox "own" {
  project    = project.p
  seed_sql   = ["db/a.sql"]
  carry_data = true
}
sandbox "inherits" {
  project = project.p
}
`)
	cfg, diags := Load(dir, Input{}, DefaultCatalog())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	own, _ := cfg.Instance(Address{Name: "own"})
	inh, _ := cfg.Instance(Address{Name: "inherits"})
	if own.Seed == nil || len(own.Seed.SQL) != 1 || own.Seed.SQL[0].Path != "db/a.sql" || own.Seed.Snapshot != "" || !own.CarryData {
		t.Errorf("own: seed %+v carry %v", own.Seed, own.CarryData)
	}
	if inh.Seed == nil || inh.Seed.Snapshot != "fixtures" || inh.CarryData {
		t.Errorf("inherits: seed %+v carry %v", inh.Seed, inh.CarryData)
	}
	before := own.Seed.Digest()
	write("db/a.sql", "CREATE TABLE a (x int, y int);\n")
	cfg, _ = Load(dir, Input{}, DefaultCatalog())
	own, _ = cfg.Instance(Address{Name: "own"})
	if own.Seed.Digest() == before {
		t.Error("editing a seed file did not change the digest")
	}

	write("main.sbx.hcl", `
project "p" {
  services = ["postgres"]
}
sandbox "bad" {
  project       = project.p
  seed_sql      = ["db/a.sql", "db/missing.sql", "../outside.sql"]
  seed_snapshot = "../x"
}
`)
	_, diags = Load(dir, Input{}, DefaultCatalog())
	var lines []string
	for _, d := range diags {
		lines = append(lines, d.Subject.String()+": "+d.Summary+"; "+d.Detail)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		`main.sbx.hcl:7,32-48: Unreadable seed file; sandbox.bad: seed file "db/missing.sql": no such file or directory.`,
		`seed file "../outside.sql" must be a path inside the configuration directory`,
		`main.sbx.hcl:8,19-25: Invalid snapshot name`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, got)
		}
	}
}
