package config

import "testing"

func TestProviderReadyTimeout(t *testing.T) {
	cfg, diags := LoadSources(t.TempDir(), map[string][]byte{"main.sbx.hcl": []byte(`provider "docker" {
  ready_timeout = "3m"
}
`)}, Input{}, DefaultCatalog())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := cfg.Provider.ReadyTimeout.String(); got != "3m0s" {
		t.Errorf("ReadyTimeout = %s, want 3m0s", got)
	}
}
