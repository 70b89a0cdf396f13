package config

import (
	"os"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestZZDebug(t *testing.T) {
	dir := os.Getenv("DBG_DIR")
	if dir == "" {
		t.Skip()
	}
	cfg, diags := Load(dir, Input{}, DefaultCatalog())
	w := hcl.NewDiagnosticTextWriter(os.Stdout, cfg.Files, 100, false)
	w.WriteDiagnostics(diags)
}

func TestZZDump(t *testing.T) {
	dir := os.Getenv("DBG_DIR")
	if dir == "" {
		t.Skip()
	}
	cfg, diags := Load(dir, Input{}, DefaultCatalog())
	t.Log(diags)
	for _, in := range cfg.Instances {
		t.Logf("%s project=%s services=%v features=%v provision=%v ttl=%v od=%v", in.Addr, in.Project, in.Services, in.Features, in.Provision, in.TTL, in.OnDemand)
	}
	for n, p := range cfg.Projects {
		t.Logf("project %s %v %v", n, p.Services, p.Extensions)
	}
	for n, s := range cfg.Sandboxes {
		t.Logf("sandbox %s %+v", n, *s)
	}
	t.Logf("provider %+v", *cfg.Provider)
	for n, v := range cfg.Variables {
		t.Logf("var %s = %#v", n, v.Value)
	}
}
