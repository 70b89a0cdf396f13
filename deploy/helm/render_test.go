package helm

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The chart's test needs helm: SANDBOXER_HELM names it, else the one
// make helm builds (.kube/bin/helm). Without it the tests skip, unless
// SANDBOXER_REQUIRE_HELM=1 (set by .ci/run after it builds helm).
const (
	helmEnv        = "SANDBOXER_HELM"
	helmRequireEnv = "SANDBOXER_REQUIRE_HELM"
	chartDir       = "sandboxer"
	release        = "sbx"
	namespace      = "agents"
)

func helmBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv(helmEnv)
	if p == "" {
		p = filepath.Join("..", "..", ".kube", "bin", "helm")
	}
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	if v := os.Getenv(helmRequireEnv); v != "" && v != "0" && v != "false" {
		t.Fatalf("no helm at %s (make helm builds it), and %s=1 requires one", p, helmRequireEnv)
	}
	t.Skipf("no helm at %s (make helm builds it; %s names another; %s=1 makes this a failure)", p, helmEnv, helmRequireEnv)
	return ""
}

// helm runs helm with its own empty home, so nothing of the user's
// repositories or plugins (or a kubeconfig) plays a part.
func helm(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), errors.New(strings.TrimSpace(stderr.String() + "\n" + stdout.String() + "\n" + err.Error()))
	}
	return stdout.String(), nil
}

// object is one rendered manifest: its kind and name, and its YAML.
type object struct {
	Kind     string
	Name     string
	NS       string
	Document []byte
}

type manifests []object

func (m manifests) kinds() []string {
	var out []string
	for _, o := range m {
		out = append(out, o.Kind)
	}
	slices.Sort(out)
	return out
}

func (m manifests) all(kind string) []object {
	var out []object
	for _, o := range m {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// one decodes the only object of kind into v.
func (m manifests) one(t *testing.T, kind string, v any) {
	t.Helper()
	objs := m.all(kind)
	if len(objs) != 1 {
		t.Fatalf("%d %s objects rendered, want 1 (kinds: %v)", len(objs), kind, m.kinds())
	}
	if err := yaml.UnmarshalStrict(objs[0].Document, v); err != nil {
		t.Fatalf("%s %s: %v", kind, objs[0].Name, err)
	}
}

// render runs helm lint --strict and helm template with the values
// files given (YAML text), and splits the output into objects.
func render(t *testing.T, values ...string) manifests {
	t.Helper()
	bin := helmBinary(t)
	var args []string
	dir := t.TempDir()
	for i, v := range values {
		f := filepath.Join(dir, "values-"+string(rune('a'+i))+".yaml")
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--values", f)
	}
	if out, err := helm(t, bin, append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	out, err := helm(t, bin, append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return split(t, out)
}

func split(t *testing.T, out string) manifests {
	t.Helper()
	var m manifests
	for _, doc := range strings.Split(out, "\n---") {
		doc = strings.TrimSpace(doc)
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if head.Kind == "" {
			continue // comments only
		}
		m = append(m, object{Kind: head.Kind, Name: head.Metadata.Name, NS: head.Metadata.Namespace, Document: []byte(doc)})
	}
	return m
}

// roleYAML reads providers/kubernetes/role.yaml: the Role the provider
// is tested under and its optional ClusterRole.
func roleYAML(t *testing.T) (rbacv1.Role, rbacv1.ClusterRole) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "providers", "kubernetes", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	var cluster rbacv1.ClusterRole
	for _, doc := range strings.Split(string(b), "\n---") {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "Role":
			err = yaml.UnmarshalStrict([]byte(doc), &role)
		case "ClusterRole":
			err = yaml.UnmarshalStrict([]byte(doc), &cluster)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(role.Rules) == 0 || len(cluster.Rules) == 0 {
		t.Fatalf("role.yaml: %d Role rules and %d ClusterRole rules, want both", len(role.Rules), len(cluster.Rules))
	}
	return role, cluster
}

func (m manifests) decode(t *testing.T, o object, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.Document, v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Name, err)
	}
}

// serviceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor
// the chart sets (no Go types for it here).
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Scheme        string `json:"scheme"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
			Authorization struct {
				Type        string `json:"type"`
				Credentials struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"credentials"`
			} `json:"authorization"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// secretVolumes maps each Secret volume to "secret:key" (its one item).
func secretVolumes(spec corev1.PodSpec) map[string]string {
	out := map[string]string{}
	for _, v := range spec.Volumes {
		if s := v.Secret; s != nil {
			keys := make([]string, 0, len(s.Items))
			for _, it := range s.Items {
				keys = append(keys, it.Key)
			}
			out[v.Name] = s.SecretName + ":" + strings.Join(keys, ",")
		}
	}
	return out
}

func mounted(c corev1.Container, path string) bool {
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == path {
			return true
		}
	}
	return false
}

func mountedEmptyDir(spec corev1.PodSpec, c corev1.Container, path string) bool {
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != path || vm.ReadOnly {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == vm.Name && v.EmptyDir != nil {
				return true
			}
		}
	}
	return false
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
