package helm

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// The configuration the chart installs when config.files is empty loads
// (no helm needed): a fresh install starts.
func TestChartDefaultConfigurationLoads(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(chartDir, "files", "main.sbx.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.LoadSources(t.TempDir(), map[string][]byte{"main.sbx.hcl": src}, config.Input{Environ: []string{}}, config.DefaultCatalog())
	if diags.HasErrors() {
		t.Fatalf("files/main.sbx.hcl does not load: %s", diags.Error())
	}
	if len(cfg.Sandboxes) == 0 {
		t.Fatal("files/main.sbx.hcl declares no sandbox")
	}
	for name, sb := range cfg.Sandboxes {
		if !sb.OnDemand {
			t.Errorf("sandbox %s is not on demand: serve's default configuration is for agents' requests", name)
		}
	}
}

// The chart's appVersion is the version of this source, so its default
// image is the one make image tags (sandboxer.local/sandboxer:VERSION).
func TestChartAppVersionIsTheSource(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	if want := testenv.SourceVersion(t); chart.AppVersion != want {
		t.Errorf("Chart.yaml appVersion %q, want the CLI's version %q (make image tags that)", chart.AppVersion, want)
	}
}
