package helm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// custom are values a user of the chart might set: their own Secrets,
// sandboxes in another namespace, tenants, a key rotation, metrics.
const custom = `
replicas: 3
image:
  tag: test
apiToken:
  existingSecret: ops-token
  key: api
state:
  backendURL:
    existingSecret: pg
    key: url
  key:
    existingSecret: keys
    key: current
  oldKey:
    existingSecret: keys
    key: previous
tenants:
  existingSecret: tenants
  key: tenants.hcl
config:
  files:
    main.sbx.hcl: |
      provider "kubernetes" { namespace = "sandboxes" }
    seed.sql: "select 1;"
rbac:
  namespace: sandboxes
serve:
  extraEnv:
    - name: KUBERNETES_SERVICE_HOST
      value: 10.0.0.1
metrics:
  serviceMonitor:
    enabled: true
    labels: {release: prometheus}
    bearerTokenSecret: {name: scrape, key: token}
`

// What the chart makes with its defaults: the Deployment and what it
// needs, no Secret, no ServiceMonitor.
func TestChartDefaults(t *testing.T) {
	m := render(t)
	want := []string{"ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ConfigMap",
		"Deployment", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount"}
	if diff := cmp.Diff(want, m.kinds()); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	var d appsv1.Deployment
	m.one(t, "Deployment", &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2 by default", d.Spec.Replicas)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "sandboxer.local/sandboxer:0.1.0" {
		t.Errorf("image = %q, want the local image at the chart's appVersion", got)
	}
	checkPod(t, m, &d, "sbx-sandboxer-api-token", "token", "sbx-sandboxer-state", "backend-url")
	checkServiceAndPDB(t, m, &d)
	checkRBAC(t, m, namespace)
	if len(m.all("ServiceMonitor")) != 0 {
		t.Error("a ServiceMonitor by default; it is off unless metrics.serviceMonitor.enabled")
	}
	// The default configuration is the chart's files/main.sbx.hcl.
	var cm corev1.ConfigMap
	m.one(t, "ConfigMap", &cm)
	def, err := os.ReadFile(filepath.Join(chartDir, "files", "main.sbx.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"main.sbx.hcl": string(def)}, cm.Data); diff != "" {
		t.Errorf("ConfigMap data (-want +got):\n%s", diff)
	}
	if !mounted(d.Spec.Template.Spec.Containers[0], "/var/lib/sandboxer/main.sbx.hcl") {
		t.Error("main.sbx.hcl is not mounted in the configuration directory")
	}
}

func TestChartCustomValues(t *testing.T) {
	m := render(t, custom)
	var d appsv1.Deployment
	m.one(t, "Deployment", &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %v, want 3", d.Spec.Replicas)
	}
	checkPod(t, m, &d, "ops-token", "api", "pg", "url")
	checkServiceAndPDB(t, m, &d)
	checkRBAC(t, m, "sandboxes")

	c := d.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--tenants=/run/sandboxer/tenants/tenants.hcl") {
		t.Errorf("args %q: no --tenants for tenants.existingSecret", c.Args)
	}
	wantEnv := map[string]string{"SANDBOXER_STATE_OLD_KEY_FILE": "/run/sandboxer/state-old-key/key", "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
	for _, e := range c.Env {
		if v, ok := wantEnv[e.Name]; ok && e.Value == v {
			delete(wantEnv, e.Name)
		}
	}
	if len(wantEnv) > 0 {
		t.Errorf("env lacks %v", wantEnv)
	}
	secrets := secretVolumes(d.Spec.Template.Spec)
	for name, want := range map[string]string{"state-key": "keys:current", "state-old-key": "keys:previous", "tenants": "tenants:tenants.hcl"} {
		if secrets[name] != want {
			t.Errorf("volume %s = %q, want Secret %s", name, secrets[name], want)
		}
	}
	// Every configuration file is in the configuration directory.
	for _, f := range []string{"main.sbx.hcl", "seed.sql"} {
		if !mounted(c, "/var/lib/sandboxer/"+f) {
			t.Errorf("%s is not mounted in the configuration directory", f)
		}
	}

	var sm serviceMonitor
	m.one(t, "ServiceMonitor", &sm)
	ep := sm.Spec.Endpoints
	if len(ep) != 1 || ep[0].Path != "/metrics" || ep[0].Port != "http" {
		t.Fatalf("ServiceMonitor endpoints = %+v, want /metrics on port http", ep)
	}
	if a := ep[0].Authorization; a.Type != "Bearer" || a.Credentials.Name != "scrape" || a.Credentials.Key != "token" {
		t.Errorf("ServiceMonitor authorization = %+v, want Bearer from Secret scrape, key token", a)
	}
	if sm.Metadata.Labels["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels = %v, want release: prometheus added", sm.Metadata.Labels)
	}
	if diff := cmp.Diff(d.Spec.Selector.MatchLabels, sm.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("ServiceMonitor selects other labels than the Deployment's (-deployment +monitor):\n%s", diff)
	}
}

// An existing ConfigMap replaces the chart's; optional cluster-scoped
// RBAC can be left out (a namespace admin installs the chart).
func TestChartExistingConfigMapNoClusterRBAC(t *testing.T) {
	m := render(t, `
config:
  existingConfigMap: ops-config
  files: {main.sbx.hcl: ""}
rbac: {nodeImages: false, tokenReview: false}
`)
	want := []string{"Deployment", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount"}
	if diff := cmp.Diff(want, m.kinds()); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	var d appsv1.Deployment
	m.one(t, "Deployment", &d)
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "config" && (v.ConfigMap == nil || v.ConfigMap.Name != "ops-config") {
			t.Errorf("config volume = %+v, want ConfigMap ops-config", v.VolumeSource)
		}
	}
	if !mounted(d.Spec.Template.Spec.Containers[0], "/var/lib/sandboxer/main.sbx.hcl") {
		t.Error("main.sbx.hcl of the existing ConfigMap is not mounted")
	}
}

// Values the chart refuses, with what it says.
func TestChartRefuses(t *testing.T) {
	bin := helmBinary(t)
	for name, tc := range map[string]struct{ values, want string }{
		"an existing ConfigMap without keys": {"config: {existingConfigMap: ops}", "needs config.files to name the keys"},
		"both PDB bounds":                    {"podDisruptionBudget: {maxUnavailable: 1, minAvailable: 1}", "not both"},
		"a misspelt value":                   {"replicaCount: 3", "additional properties 'replicaCount' not allowed"},
		"an inline secret":                   {"apiToken: {value: s3cret}", "additional properties 'value' not allowed"},
	} {
		t.Run(name, func(t *testing.T) {
			f := t.TempDir() + "/values.yaml"
			if err := writeFile(f, tc.values); err != nil {
				t.Fatal(err)
			}
			_, err := helm(t, bin, "template", release, chartDir, "--values", f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// checkPod checks the pod serve runs in: restricted, its probes, the
// token, backend URL and state key from the Secrets named, and no
// secret value anywhere in the chart's output.
func checkPod(t *testing.T, m manifests, d *appsv1.Deployment, tokenSecret, tokenKey, backendSecret, backendKey string) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if v := restrictedViolations(spec); len(v) > 0 {
		t.Errorf("the pod does not meet the restricted Pod Security level: %s", strings.Join(v, "; "))
	}
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsUser == nil || *spec.SecurityContext.RunAsUser != 65532 {
		t.Errorf("pod runAsUser = %v, want 65532 (the image's user)", spec.SecurityContext)
	}
	if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
		t.Error("the pod mounts no ServiceAccount token: the kubernetes runtime needs it in-cluster")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want serve alone", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("args = %q, want serve first", c.Args)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe = %s on port %s, want %s on http", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || !slices.Contains(c.Args, "--listen=:"+itoa(c.Ports[0].ContainerPort)) {
		t.Errorf("ports %+v and args %q: serve must listen on the port named http", c.Ports, c.Args)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources = %+v, want requests and a memory limit", c.Resources)
	}

	// Secrets only by reference: the chart makes none, and every variable
	// that could hold one comes from a Secret or names a file.
	if n := len(m.all("Secret")); n != 0 {
		t.Errorf("the chart renders %d Secret(s): secret values must come from the user's own Secrets", n)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
		secretish := strings.Contains(e.Name, "TOKEN") || strings.Contains(e.Name, "KEY") ||
			strings.Contains(e.Name, "PASSWORD") || strings.HasSuffix(e.Name, "_URL")
		if secretish && !strings.HasSuffix(e.Name, "_FILE") && e.Value != "" {
			t.Errorf("env %s has an inline value; it must come from a Secret", e.Name)
		}
	}
	if ref := env["SANDBOXER_BACKEND_URL"].ValueFrom; ref == nil || ref.SecretKeyRef == nil ||
		ref.SecretKeyRef.Name != backendSecret || ref.SecretKeyRef.Key != backendKey {
		t.Errorf("SANDBOXER_BACKEND_URL = %+v, want Secret %s key %s", env["SANDBOXER_BACKEND_URL"], backendSecret, backendKey)
	}
	if ref := env["SANDBOXER_REPLICA"].ValueFrom; ref == nil || ref.FieldRef == nil || ref.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("SANDBOXER_REPLICA = %+v, want the pod's name (downward API)", env["SANDBOXER_REPLICA"])
	}
	if _, ok := env["SANDBOXER_API_TOKEN"]; ok {
		t.Error("SANDBOXER_API_TOKEN is set: the token comes from --token-file, a Secret's file")
	}
	if env["SANDBOXER_STATE_KEY_FILE"].Value != "/run/sandboxer/state-key/key" || !mounted(c, "/run/sandboxer/state-key") {
		t.Errorf("SANDBOXER_STATE_KEY_FILE = %+v, want the mounted state-key Secret", env["SANDBOXER_STATE_KEY_FILE"])
	}
	if !slices.Contains(c.Args, "--token-file=/run/sandboxer/api-token/token") || !mounted(c, "/run/sandboxer/api-token") {
		t.Errorf("args %q: want --token-file in the mounted api-token Secret", c.Args)
	}
	if got := secretVolumes(spec)["api-token"]; got != tokenSecret+":"+tokenKey {
		t.Errorf("api-token volume = %q, want Secret %s key %s", got, tokenSecret, tokenKey)
	}
	// What serve writes (the configuration directory's .sandboxer, the
	// capability cache, temporary files) is on emptyDirs.
	for _, dir := range []string{"/var/lib/sandboxer", "/var/cache/sandboxer", "/tmp"} {
		if !mountedEmptyDir(spec, c, dir) {
			t.Errorf("%s is not a writable emptyDir (the root filesystem is read-only)", dir)
		}
	}
	if !slices.Contains(c.Args, "--chdir=/var/lib/sandboxer") {
		t.Errorf("args %q: want --chdir to the configuration directory", c.Args)
	}
	// A stopping pod drains (--shutdown-delay) and finishes its calls
	// (--shutdown-timeout) within its grace period.
	delay, timeout := durationArg(t, c.Args, "--shutdown-delay"), durationArg(t, c.Args, "--shutdown-timeout")
	if delay <= 0 {
		t.Error("no --shutdown-delay: the endpoints would still send calls to a pod that closed its listener")
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= delay+timeout {
		t.Errorf("terminationGracePeriodSeconds %v does not cover --shutdown-delay %s + --shutdown-timeout %s", g, delay, timeout)
	}
}

func checkServiceAndPDB(t *testing.T, m manifests, d *appsv1.Deployment) {
	t.Helper()
	var svc corev1.Service
	m.one(t, "Service", &svc)
	if diff := cmp.Diff(d.Spec.Selector.MatchLabels, svc.Spec.Selector); diff != "" {
		t.Errorf("the Service selects other labels than the Deployment's (-deployment +service):\n%s", diff)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports = %+v, want one to the port named http", svc.Spec.Ports)
	}
	var pdb policyv1.PodDisruptionBudget
	m.one(t, "PodDisruptionBudget", &pdb)
	if pdb.Spec.Selector == nil {
		t.Fatal("the PodDisruptionBudget selects nothing")
	}
	if diff := cmp.Diff(d.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("the PodDisruptionBudget selects other labels than the Deployment's (-deployment +pdb):\n%s", diff)
	}
	if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
		t.Error("the PodDisruptionBudget sets neither maxUnavailable nor minAvailable")
	}
}

// checkRBAC: the Role in the sandboxes' namespace has exactly the rules
// of providers/kubernetes/role.yaml, bound to the pods' ServiceAccount;
// the optional ClusterRole, when made, exactly role.yaml's too.
func checkRBAC(t *testing.T, m manifests, sandboxNS string) {
	t.Helper()
	want, wantCluster := roleYAML(t)
	var role rbacv1.Role
	m.one(t, "Role", &role)
	if diff := cmp.Diff(want.Rules, role.Rules); diff != "" {
		t.Errorf("the chart's Role differs from providers/kubernetes/role.yaml (-role.yaml +chart):\n%s", diff)
	}
	if role.Namespace != sandboxNS {
		t.Errorf("Role in namespace %q, want the sandboxes' %q", role.Namespace, sandboxNS)
	}
	var sa corev1.ServiceAccount
	m.one(t, "ServiceAccount", &sa)
	var rb rbacv1.RoleBinding
	m.one(t, "RoleBinding", &rb)
	wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: namespace}}
	if diff := cmp.Diff(wantSubject, rb.Subjects); diff != "" || rb.RoleRef.Name != role.Name || rb.Namespace != sandboxNS {
		t.Errorf("RoleBinding %s/%s binds %s to %+v, want the Role to the ServiceAccount %s", rb.Namespace, rb.Name, rb.RoleRef.Name, rb.Subjects, sa.Name)
	}
	var d appsv1.Deployment
	m.one(t, "Deployment", &d)
	if d.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("the pods run as %q, want the chart's ServiceAccount %q", d.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
	for _, o := range m.all("ClusterRole") {
		var cr rbacv1.ClusterRole
		m.decode(t, o, &cr)
		switch {
		case strings.HasSuffix(cr.Name, "-node-images"):
			if diff := cmp.Diff(wantCluster.Rules, cr.Rules); diff != "" {
				t.Errorf("ClusterRole %s differs from role.yaml's (-role.yaml +chart):\n%s", cr.Name, diff)
			}
		case strings.HasSuffix(cr.Name, "-tokenreview"):
			want := []rbacv1.PolicyRule{{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}}
			if diff := cmp.Diff(want, cr.Rules); diff != "" {
				t.Errorf("ClusterRole %s (-want +got):\n%s", cr.Name, diff)
			}
		default:
			t.Errorf("unexpected ClusterRole %s", cr.Name)
		}
	}
}

// durationArg is the value of a --flag=DURATION argument (0 if absent).
func durationArg(t *testing.T, args []string, flag string) time.Duration {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			return d
		}
	}
	return 0
}
