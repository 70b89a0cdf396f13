package config

import (
	"strings"
	"testing"
)

func TestRuntimeDefaultsAndChoices(t *testing.T) {
	project := `
project "p" {
  services = ["postgres"]
}
`
	tests := []struct {
		name string
		src  string
		want map[string]string // address → runtime
	}{
		{"no provider block: docker", project + `sandbox "a" { project = project.p }`,
			map[string]string{"sandbox.a": RuntimeDocker}},
		{"only a kubernetes block: kubernetes", `provider "kubernetes" {}` + project + `sandbox "a" { project = project.p }`,
			map[string]string{"sandbox.a": RuntimeKubernetes}},
		{"both blocks: docker unless asked", `
provider "docker" {}
provider "kubernetes" {}
` + project + `
sandbox "a" { project = project.p }
sandbox "b" {
  project = project.p
  runtime = "kubernetes"
}`, map[string]string{"sandbox.a": RuntimeDocker, "sandbox.b": RuntimeKubernetes}},
		{"the project's runtime, the sandbox's wins", `
project "k" {
  services = ["postgres"]
  runtime  = "kubernetes"
}
sandbox "a" { project = project.k }
sandbox "b" {
  project = project.k
  runtime = "docker"
}`, map[string]string{"sandbox.a": RuntimeKubernetes, "sandbox.b": RuntimeDocker}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, tt.src, Input{})
			got := map[string]string{}
			for _, in := range cfg.Instances {
				got[in.Addr.String()] = in.Runtime
				wantPublish := cfg.ProviderFor(in.Runtime).Publish
				if in.Publish != wantPublish {
					t.Errorf("%s publish %+v, want its runtime's %+v", in.Addr, in.Publish, wantPublish)
				}
			}
			for addr, rt := range tt.want {
				if got[addr] != rt {
					t.Errorf("%s runtime %q, want %q", addr, got[addr], rt)
				}
			}
		})
	}
}

func TestKubernetesBlock(t *testing.T) {
	cfg := load(t, `
provider "kubernetes" {
  kubeconfig = "/etc/kube/config"
  context    = "ci"
  namespace  = "sandboxes"
  qps        = 300
  burst      = 600
  endpoint   = "port-forward"
  memory_mb  = 512
  storage    = "tmpfs"
  tls        = true
  image "postgres" { ref = "sandboxer.local/postgres:17" }
}
project "p" { services = ["postgres", "redis"] }
sandbox "a" { project = project.p }
`, Input{})
	k := cfg.Kubernetes
	if k.Runtime != RuntimeKubernetes || k.Kubeconfig != "/etc/kube/config" || k.Context != "ci" || k.Namespace != "sandboxes" ||
		k.QPS != 300 || k.Burst != 600 || k.Endpoint != EndpointPortForward || k.MemoryMB != 512 || k.PidsLimit != DefaultPidsLimit || k.Storage != StorageTmpfs || k.Publish != KubernetesPublish(true) {
		t.Errorf("kubernetes provider %+v", k)
	}
	if k.Images["postgres"].Ref != "sandboxer.local/postgres:17" || !k.Images["redis"].Default {
		t.Errorf("images %+v", k.Images)
	}
	if in := cfg.Instances[0]; in.Runtime != RuntimeKubernetes || len(in.Networks) != 0 {
		t.Errorf("instance %+v", in)
	}
	if d := load(t, `provider "kubernetes" {}`, Input{}).Kubernetes; d.Namespace != "" || d.Publish.TLS ||
		d.QPS != DefaultKubeQPS || d.Burst != DefaultKubeBurst || d.Endpoint != EndpointAuto {
		t.Errorf("defaults %+v", d)
	}
}

func TestKubernetesDiagnostics(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // in the one diagnostic, with its location
	}{
		{"docker setting in the kubernetes block", `provider "kubernetes" {
  networks = ["ci"]
}`, `main.sbx.hcl:2,3-11: error: Docker setting in a kubernetes provider: networks is a setting of the docker provider`},
		{"host in the kubernetes block", `provider "kubernetes" {
  host = "tcp://x:2375"
}`, `main.sbx.hcl:2,3-7: error: Docker setting in a kubernetes provider: host is a setting`},
		{"networks on a kubernetes sandbox", `provider "kubernetes" {}
project "p" { services = ["postgres"] }
sandbox "a" {
  project  = project.p
  networks = ["ci"]
}`, `main.sbx.hcl:5,3-11: error: Docker setting on a Kubernetes sandbox: sandbox.a runs on kubernetes`},
		{"qps out of range", `provider "kubernetes" {
  qps = 0
}`, `main.sbx.hcl:2,9-10: error: Invalid value`},
		{"unknown endpoint mode", `provider "kubernetes" {
  endpoint = "node-port"
}`, `main.sbx.hcl:2,14-25: error: Invalid endpoint: endpoint is "node-port"; it must be "pod-ip"`},
		{"endpoint of the wrong type", `provider "kubernetes" {
  endpoint = true
}`, `main.sbx.hcl:2,14-18: error: `},
		{"unknown runtime", `project "p" {
  services = ["postgres"]
  runtime  = "nomad"
}`, `main.sbx.hcl:3,14-21: error: Invalid runtime: runtime is "nomad"`},
		{"bad namespace", `provider "kubernetes" {
  namespace = "Sand_Boxes"
}`, `main.sbx.hcl:2,15-27: error: Invalid namespace: "Sand_Boxes"`},
		{"two kubernetes blocks", `provider "kubernetes" {}
provider "kubernetes" {}`, `Duplicate provider`},
		{"unknown provider", `provider "nomad" {}`, `sandboxer supports the "docker" and "kubernetes" providers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := LoadSources(".", map[string][]byte{"main.sbx.hcl": []byte(tt.src)}, Input{}, DefaultCatalog())
			if len(diags) != 1 {
				t.Fatalf("want one diagnostic, got:\n%s", describeAll(diags))
			}
			if got := describe(diags[0]); !strings.Contains(got, tt.want) {
				t.Errorf("diagnostic\n  %s\nwant it to contain\n  %s", got, tt.want)
			}
		})
	}
}
