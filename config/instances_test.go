package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/hcl/v2"
)

// load decodes one in-memory file and fails the test on any diagnostic.
func load(t *testing.T, src string, in Input) *Config {
	t.Helper()
	cfg, diags := LoadSources(".", map[string][]byte{"main.sbx.hcl": []byte(src)}, in, DefaultCatalog())
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", describeAll(diags))
	}
	return cfg
}

var ignoreRanges = cmpopts.IgnoreTypes(hcl.Range{})

const twoServiceProject = `
project "billing" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["vector", "postgis"], redis = ["search"] }
}
`

func TestInstances(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []*Instance
	}{
		{
			name: "spec example: requested subset, provision the opted set",
			src: twoServiceProject + `
sandbox "ci" {
  project    = project.billing
  services   = ["postgres"]
  extensions = { postgres = ["pg_trgm"] }
  ttl        = "4h"
}`,
			want: []*Instance{{
				Addr:      Address{Name: "ci"},
				Project:   "billing",
				Services:  []string{"postgres"},
				Features:  FeatureSet{"postgres": {"pg_trgm", "postgis", "vector"}},
				Provision: FeatureSet{"postgres": {"pg_trgm", "postgis", "vector"}, "redis": {"search"}},
				TTL:       4 * time.Hour,
			}},
		},
		{
			name: "services default to everything opted",
			src: twoServiceProject + `
sandbox "all" {
  project = project.billing
}`,
			want: []*Instance{{
				Addr:      Address{Name: "all"},
				Project:   "billing",
				Services:  []string{"postgres", "redis"},
				Features:  FeatureSet{"postgres": {"postgis", "vector"}, "redis": {"search"}},
				Provision: FeatureSet{"postgres": {"postgis", "vector"}, "redis": {"search"}},
			}},
		},
		{
			name: "override for an opted but unrequested service only reaches Provision",
			src: twoServiceProject + `
sandbox "pg" {
  project    = project.billing
  services   = ["postgres"]
  extensions = { redis = ["json"] }
}`,
			want: []*Instance{{
				Addr:      Address{Name: "pg"},
				Project:   "billing",
				Services:  []string{"postgres"},
				Features:  FeatureSet{"postgres": {"postgis", "vector"}},
				Provision: FeatureSet{"postgres": {"postgis", "vector"}, "redis": {"json", "search"}},
			}},
		},
		{
			name: "for_each over a set: element is key and value, sorted by address",
			src: twoServiceProject + `
sandbox "b" {
  for_each = toset(["zeta", "alpha"])
  project  = project.billing
  services = [each.value == "zeta" ? "redis" : "postgres"]
  ttl      = each.key == "zeta" ? "1d" : "0"
}`,
			want: []*Instance{
				{
					Addr:      Address{Name: "b", Key: "alpha", HasKey: true},
					Project:   "billing",
					Services:  []string{"postgres"},
					Features:  FeatureSet{"postgres": {"postgis", "vector"}},
					Provision: FeatureSet{"postgres": {"postgis", "vector"}, "redis": {"search"}},
				},
				{
					Addr:      Address{Name: "b", Key: "zeta", HasKey: true},
					Project:   "billing",
					Services:  []string{"redis"},
					Features:  FeatureSet{"redis": {"search"}},
					Provision: FeatureSet{"postgres": {"postgis", "vector"}, "redis": {"search"}},
					TTL:       24 * time.Hour,
				},
			},
		},
		{
			name: "for_each over a map: each.value drives the override",
			src: `
project "plain" {
  services = ["postgres", "redis"]
}
sandbox "m" {
  for_each   = { x = ["citext"], y = [] }
  project    = project.plain
  extensions = { postgres = each.value }
}`,
			want: []*Instance{
				{
					Addr:      Address{Name: "m", Key: "x", HasKey: true},
					Project:   "plain",
					Services:  []string{"postgres", "redis"},
					Features:  FeatureSet{"postgres": {"citext"}, "redis": {}},
					Provision: FeatureSet{"postgres": {"citext"}, "redis": {}},
				},
				{
					Addr:      Address{Name: "m", Key: "y", HasKey: true},
					Project:   "plain",
					Services:  []string{"postgres", "redis"},
					Features:  FeatureSet{"postgres": {}, "redis": {}},
					Provision: FeatureSet{"postgres": {}, "redis": {}},
				},
			},
		},
		{
			name: "empty for_each yields no instances",
			src: twoServiceProject + `
sandbox "none" {
  for_each = {}
  project  = project.billing
}`,
			want: nil,
		},
		{
			name: "on_demand template keeps its block address",
			src: twoServiceProject + `
sandbox "agent" {
  project   = project.billing
  on_demand = true
  services  = ["redis"]
}`,
			want: []*Instance{{
				Addr:      Address{Name: "agent"},
				Project:   "billing",
				Services:  []string{"redis"},
				Features:  FeatureSet{"redis": {"search"}},
				Provision: FeatureSet{"postgres": {"postgis", "vector"}, "redis": {"search"}},
				OnDemand:  true,
			}},
		},
		{
			name: "normalization: duplicates dropped, lists sorted",
			src: `
project "p" {
  services   = ["redis", "postgres", "redis"]
  extensions = { postgres = ["vector", "citext", "vector"] }
}
sandbox "s" {
  project    = project.p
  services   = ["redis", "redis"]
  extensions = { redis = ["search", "bloom", "search"], postgres = [] }
}`,
			want: []*Instance{{
				Addr:      Address{Name: "s"},
				Project:   "p",
				Services:  []string{"redis"},
				Features:  FeatureSet{"redis": {"bloom", "search"}},
				Provision: FeatureSet{"postgres": {"citext", "vector"}, "redis": {"bloom", "search"}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, tt.src, Input{})
			for _, in := range tt.want {
				if in.Publish == (Publish{}) {
					in.Publish = DefaultPublish() // no provider block: loopback
				}
				if in.Runtime == "" {
					in.Runtime = RuntimeDocker // no provider block: docker
				}
			}
			if diff := cmp.Diff(tt.want, cfg.Instances, ignoreRanges, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("instances (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProjects(t *testing.T) {
	cfg := load(t, `
project "bare" {
  services = ["redis", "postgres"]
}
project "partial" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["vector", "citext", "citext"] }
}`, Input{})
	want := map[string]*Project{
		"bare": {
			Name:       "bare",
			Services:   []string{"postgres", "redis"},
			Extensions: FeatureSet{"postgres": {}, "redis": {}},
		},
		"partial": {
			Name:       "partial",
			Services:   []string{"postgres", "redis"},
			Extensions: FeatureSet{"postgres": {"citext", "vector"}, "redis": {}},
		},
	}
	// Not EquateEmpty: a bare service must be present with an empty,
	// non-nil list.
	if diff := cmp.Diff(want, cfg.Projects, ignoreRanges); diff != "" {
		t.Errorf("projects (-want +got):\n%s", diff)
	}
}

func TestSandboxBlocks(t *testing.T) {
	cfg := load(t, twoServiceProject+`
sandbox "one" {
  project = project.billing
  ttl     = "2d12h"
}
sandbox "many" {
  for_each = toset(["a", "b"])
  project  = project.billing
  ttl      = "30m"
}
sandbox "mixed" {
  for_each = toset(["a", "b"])
  project  = project.billing
  ttl      = each.key == "a" ? "1h" : "2h"
}`, Input{})
	want := map[string]*Sandbox{
		"one":   {Name: "one", Project: "billing", TTL: 60 * time.Hour},
		"many":  {Name: "many", Project: "billing", ForEach: true, TTL: 30 * time.Minute},
		"mixed": {Name: "mixed", Project: "billing", ForEach: true},
	}
	if diff := cmp.Diff(want, cfg.Sandboxes, ignoreRanges); diff != "" {
		t.Errorf("sandboxes (-want +got):\n%s", diff)
	}
}

func TestProviderDefaults(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want *Provider
	}{
		{
			name: "no provider block",
			src:  `project "p" { services = ["postgres"] }`,
			want: &Provider{
				Images:    map[string]Image{"mysql": {Ref: "mariadb:11.8", Default: true}, "postgres": {Ref: "postgres:17", Default: true}, "redis": {Ref: "redis:8", Default: true}, "valkey": {Ref: "valkey/valkey:8", Default: true}},
				MemoryMB:  1024,
				PidsLimit: 1024,
			},
		},
		{
			name: "partial block keeps the other defaults",
			src: `
provider "docker" {
  memory_mb = 512
  image "redis" {
    ref     = "redis/redis-stack-server:7"
    modules = { search = "/opt/search.so" }
  }
}`,
			want: &Provider{
				Images: map[string]Image{
					"mysql":    {Ref: "mariadb:11.8", Default: true},
					"postgres": {Ref: "postgres:17", Default: true},
					"redis":    {Ref: "redis/redis-stack-server:7", Modules: map[string]string{"search": "/opt/search.so"}},
					"valkey":   {Ref: "valkey/valkey:8", Default: true},
				},
				MemoryMB:  512,
				PidsLimit: 1024,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, tt.src, Input{})
			tt.want.Publish = DefaultPublish()
			tt.want.Storage = StorageVolume
			tt.want.Runtime = RuntimeDocker
			if diff := cmp.Diff(tt.want, cfg.Provider, ignoreRanges); diff != "" {
				t.Errorf("provider (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutputsSortedByName(t *testing.T) {
	cfg := load(t, `
output "zeta" {
  value = 1
}
output "alpha" {
  value       = "a"
  sensitive   = true
  description = "first"
}`, Input{})
	var got []string
	for _, o := range cfg.Outputs {
		got = append(got, o.Name)
	}
	if diff := cmp.Diff([]string{"alpha", "zeta"}, got); diff != "" {
		t.Errorf("output order (-want +got):\n%s", diff)
	}
	if o := cfg.Outputs[0]; !o.Sensitive || o.Description != "first" {
		t.Errorf("alpha = %+v, want sensitive with description", o)
	}
}
