// Package examples holds example configurations; this test keeps them valid.
package examples

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

func TestExamplesValidate(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			cfg, diags := config.Load(e.Name(), config.Input{}, config.DefaultCatalog())
			if diags.HasErrors() {
				t.Fatalf("%s does not validate: %s", e.Name(), diags.Error())
			}
			if len(cfg.Instances) == 0 {
				t.Errorf("%s declares no sandbox", e.Name())
			}
		})
	}
	if n < 3 {
		t.Errorf("found %d examples, want quickstart, ci and review", n)
	}
}

// Every example runs as its comments say both here, where its provider
// block names the local images, and elsewhere with the block deleted,
// where the plan picks the official image for each sandbox's features
// (no registry here, so the choice is what is tested, not a pull).
func TestExamplesImages(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]bool{}
	for _, d := range config.DefaultImages() {
		defaults[d.Ref] = true
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			sources := map[string][]byte{}
			stripped := map[string][]byte{}
			files, _ := filepath.Glob(filepath.Join(e.Name(), "*.sbx.hcl"))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				sources[filepath.Base(f)] = b
				hf, diags := hclwrite.ParseConfig(b, f, hcl.InitialPos)
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				for _, blk := range hf.Body().Blocks() {
					if blk.Type() == "provider" {
						hf.Body().RemoveBlock(blk)
					}
				}
				stripped[filepath.Base(f)] = hf.Bytes()
			}
			for _, tc := range []struct {
				name  string
				src   map[string][]byte
				local bool
			}{{"local images", sources, true}, {"provider block deleted", stripped, false}} {
				cfg, diags := config.LoadSources(e.Name(), tc.src, config.Input{}, config.DefaultCatalog())
				if diags.HasErrors() {
					t.Fatalf("%s: %s", tc.name, diags.Error())
				}
				for _, in := range cfg.Instances {
					// On-demand templates too: what their first request gets.
					ch := plan.Decide(in, nil, nil, plan.Options{})
					if err := plan.ChooseImagesFor([]*plan.Change{ch}, cfg.ProviderFor); err != nil {
						t.Errorf("%s: %s: %v", tc.name, in.Addr, err)
						continue
					}
					for svc, ref := range ch.After.Images {
						if tc.local != strings.HasPrefix(ref, "sandboxer.local/") || (!tc.local && !defaults[ref]) {
							t.Errorf("%s: %s runs %s image %q", tc.name, in.Addr, svc, ref)
						}
					}
				}
			}
		})
	}
}

// The examples' *.sbtest.hcl files pass against the in-memory runtime,
// as `sandboxer test --in-memory` runs them (no engine needed).
func TestExamplesSandboxerTest(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, diags := config.LoadTestFiles(e.Name(), nil)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", e.Name(), diags.Error())
		}
		if len(files) == 0 {
			continue
		}
		ran++
		t.Run(e.Name(), func(t *testing.T) {
			report, err := sandboxer.RunTests(context.Background(), e.Name(), sandboxer.Options{Environ: []string{}}, sandboxer.TestOptions{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range report.Files {
				for _, r := range f.Runs {
					if r.Status != sandboxer.TestPass {
						t.Errorf("%s: run %q: %s: %s", f.Name, r.Name, r.Status, r.Diagnostics.Error())
					}
				}
				if f.Status != sandboxer.TestPass {
					t.Errorf("%s: %s: %s", f.Name, f.Status, f.Diagnostics.Error())
				}
			}
			if _, err := os.Stat(filepath.Join(e.Name(), ".sandboxer")); err == nil {
				t.Errorf("%s: sandboxer test left a .sandboxer directory", e.Name())
			}
		})
	}
	if ran == 0 {
		t.Error("no example has a test file; examples/ci should")
	}
}
