package config

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// FuzzLoadSources feeds arbitrary files through the whole pipeline: no
// input may panic, a failed load still returns what is needed to render
// its diagnostics, and a successful one upholds the model's invariants.
func FuzzLoadSources(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*", "*", "*"+FileSuffix))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range seeds {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, src := range trickyInputs() {
		f.Add([]byte(src))
	}
	cat := DefaultCatalog()
	in := Input{Environ: []string{"SBX_VAR_ttl=4h", "SBX_VAR_n=2", `SBX_VAR_l=["a"]`}}
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, diags := LoadSources(".", map[string][]byte{"main.sbx.hcl": src}, in, cat)
		if cfg == nil || cfg.Files == nil || cfg.Sources == nil {
			t.Fatal("LoadSources returned no files to render diagnostics with")
		}
		for _, d := range diags {
			if d.Subject != nil && d.Subject.Filename != "main.sbx.hcl" && d.Subject.Filename != "<value for var.n>" && d.Subject.Filename != "<value for var.l>" {
				t.Fatalf("diagnostic blames unknown file %q", d.Subject.Filename)
			}
		}
		if out, fdiags := Format("main.sbx.hcl", src); !fdiags.HasErrors() {
			if _, again := Format("main.sbx.hcl", out); again.HasErrors() {
				t.Fatalf("formatted output does not parse: %v\n%s", again, out)
			}
		}
		if diags.HasErrors() {
			return
		}
		checkInvariants(t, cfg, cat)
		vals := map[Address]map[string]map[string]string{}
		for _, inst := range cfg.Instances {
			addr := inst.Addr
			if inst.OnDemand {
				addr = Address{Name: addr.Name, Key: "k", HasKey: true}
			}
			vals[addr] = creds("h")
		}
		cfg.EvalOutputs(vals)
		cfg.EvalOutputs(nil)
	})
}

func checkInvariants(t *testing.T, cfg *Config, cat *Catalog) {
	t.Helper()
	if !sort.SliceIsSorted(cfg.Instances, func(i, j int) bool {
		return cfg.Instances[i].Addr.String() < cfg.Instances[j].Addr.String()
	}) {
		t.Fatal("instances not sorted by address")
	}
	for _, inst := range cfg.Instances {
		if _, err := ParseAddress(inst.Addr.String()); err != nil {
			t.Fatalf("instance address does not round-trip: %v", err)
		}
		p := cfg.Projects[inst.Project]
		if p == nil {
			t.Fatalf("%s: project %q missing", inst.Addr, inst.Project)
		}
		if !slices.Equal(inst.Features.Services(), inst.Services) {
			t.Fatalf("%s: Features keys %v != Services %v", inst.Addr, inst.Features.Services(), inst.Services)
		}
		if !slices.Equal(inst.Provision.Services(), p.Services) {
			t.Fatalf("%s: Provision keys %v != project services %v", inst.Addr, inst.Provision.Services(), p.Services)
		}
		if missing := inst.Provision.Missing(inst.Features); len(missing) > 0 {
			t.Fatalf("%s: Provision lacks %v", inst.Addr, missing)
		}
		for svc, feats := range inst.Provision {
			if !slices.Equal(feats, SortedUnique(feats)) {
				t.Fatalf("%s: %s features not normalized: %v", inst.Addr, svc, feats)
			}
			for _, ft := range feats {
				if err := cat.CheckFeature(svc, ft); err != nil {
					t.Fatalf("%s: %v", inst.Addr, err)
				}
			}
		}
	}
	for _, svc := range cat.Services() {
		if cfg.Provider.Images[svc].Ref == "" {
			t.Fatalf("no image for %s", svc)
		}
	}
}
