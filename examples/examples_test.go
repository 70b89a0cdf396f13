// Package examples holds example configurations; this test keeps them valid.
package examples

import (
	"os"
	"testing"

	"github.com/sandboxer/sandboxer/config"
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
