package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPublishDefaults(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		environ []string
		want    Publish
	}{
		{"no provider block", ``, nil, DefaultPublish()},
		{"loopback with TLS asked for", `provider "docker" {
  tls = true
}`, nil, Publish{Address: "127.0.0.1", AdvertiseHost: "127.0.0.1", TLS: true}},
		{"one interface is advertised as itself, TLS on", `provider "docker" {
  publish_address = "192.0.2.7"
}`, nil, Publish{Address: "192.0.2.7", AdvertiseHost: "192.0.2.7", TLS: true}},
		{"every interface of a local engine: 127.0.0.1", `provider "docker" {
  publish_address = "0.0.0.0"
}`, nil, Publish{Address: "0.0.0.0", AdvertiseHost: "127.0.0.1", TLS: true}},
		{"every interface of a remote engine: the engine's host", `provider "docker" {
  host            = "tcp://build-7.internal:2376"
  publish_address = "0.0.0.0"
}`, nil, Publish{Address: "0.0.0.0", AdvertiseHost: "build-7.internal", TLS: true}},
		{"DOCKER_HOST names the remote engine", `provider "docker" {
  publish_address = "::"
}`, []string{"DOCKER_HOST=ssh://ci@10.1.2.3"}, Publish{Address: "::", AdvertiseHost: "10.1.2.3", TLS: true}},
		{"advertise_host wins; private address may opt out of TLS", `provider "docker" {
  publish_address = "10.0.0.5"
  advertise_host  = "db.lan"
  tls             = false
}`, nil, Publish{Address: "10.0.0.5", AdvertiseHost: "db.lan"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, tt.src+"\nproject \"p\" { services = [\"postgres\"] }\n", Input{Environ: tt.environ})
			if diff := cmp.Diff(tt.want, cfg.Provider.Publish); diff != "" {
				t.Errorf("publish (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInstanceNetworks(t *testing.T) {
	cfg := load(t, `
provider "docker" {
  networks = ["shared", "agents"]
}
project "p" { services = ["postgres"] }
sandbox "plain" { project = project.p }
sandbox "more" {
  for_each = toset(["a", "b"])
  project  = project.p
  networks = ["ci-${each.key}", "agents"]
}`, Input{})
	got := map[string][]string{}
	for _, in := range cfg.Instances {
		got[in.Addr.String()] = in.Networks
	}
	want := map[string][]string{
		"sandbox.plain":     {"agents", "shared"},
		`sandbox.more["a"]`: {"agents", "ci-a", "shared"},
		`sandbox.more["b"]`: {"agents", "ci-b", "shared"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("networks (-want +got):\n%s", diff)
	}
	var names []string
	for _, r := range cfg.NetworkRefs {
		names = append(names, r.Name)
	}
	// One reference per name and place: the provider's two, then the
	// block's for each key (same range, different names) and "agents" once.
	if diff := cmp.Diff([]string{"shared", "agents", "ci-a", "agents", "ci-b"}, names); diff != "" {
		t.Errorf("network references (-want +got):\n%s", diff)
	}
}

// TestProviderStorage: a volume unless the provider asks for a tmpfs.
func TestProviderStorage(t *testing.T) {
	if got := load(t, "project \"p\" { services = [\"postgres\"] }\n", Input{}).Provider.Storage; got != StorageVolume {
		t.Errorf("default storage %q, want %q", got, StorageVolume)
	}
	cfg := load(t, "provider \"docker\" {\n  storage = \"tmpfs\"\n}\nproject \"p\" { services = [\"postgres\"] }\n", Input{})
	if cfg.Provider.Storage != StorageTmpfs {
		t.Errorf("storage %q, want %q", cfg.Provider.Storage, StorageTmpfs)
	}
}

// TestProviderTemplate: PostgreSQL templates are on unless the docker
// provider says template = false; a value that is not a bool is refused.
func TestProviderTemplate(t *testing.T) {
	if load(t, "project \"p\" { services = [\"postgres\"] }\n", Input{}).Provider.NoTemplate {
		t.Error("templates off by default")
	}
	cfg := load(t, "provider \"docker\" {\n  template = false\n}\nproject \"p\" { services = [\"postgres\"] }\n", Input{})
	if !cfg.Provider.NoTemplate {
		t.Error("template = false left templates on")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte("provider \"docker\" {\n  template = \"maybe\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diags := Load(dir, Input{}, DefaultCatalog()); !diags.HasErrors() || !strings.Contains(diags.Error(), "main.sbx.hcl:2") {
		t.Errorf("template = \"maybe\": %v", diags)
	}
}
