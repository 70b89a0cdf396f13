package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/providers/kubernetes/internal/kubeclient/kubeclienttest"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/state"
)

func TestPodNamesAreDNSLabelsAndDistinct(t *testing.T) {
	lineages := []string{"6f1c2b9e-0c1d-4c8e-9a3b-6c1f0e2d3a4b", "test_Lineage.x", "", "ÄÖÜ", strings.Repeat("z", 200)}
	addrs := []string{"sandbox.ci", `sandbox.agent["dev_7"]`, `sandbox.agent["dev-7"]`, "sandbox." + strings.Repeat("a", 80), "x"}
	seen := map[string]string{}
	for _, l := range lineages {
		for _, a := range addrs {
			for _, g := range []int{1, 9999} {
				n := podName(l, a, g)
				if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
					t.Errorf("podName(%q, %q, %d) = %q: %v", l, a, g, n, errs)
				}
				key := l + "\x00" + a + "\x00" + string(rune(g))
				if other, ok := seen[n]; ok && other != key {
					t.Errorf("podName %q shared by %q and %q", n, other, key)
				}
				seen[n] = key
				if len(n+".default.svc.cluster.local") > 253 {
					t.Errorf("DNS name of %q too long", n)
				}
			}
		}
	}
	if got := podName("6f1c2b9e-0c1d-4c8e-9a3b-6c1f0e2d3a4b", "sandbox.ci", 3); got != "sbx-6f1c2b9e0c1d-ci-g3" {
		t.Errorf("podName = %q", got)
	}
}

func TestLabelValues(t *testing.T) {
	for _, s := range []string{"6f1c2b9e-0c1d-4c8e-9a3b-6c1f0e2d3a4b", `sandbox.agent["dev 7"]`, "_x_", strings.Repeat("a", 64), "", "-", "ü"} {
		v := labelValue(s)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 || v == "" && s != "" {
			t.Errorf("labelValue(%q) = %q: %v", s, v, errs)
		}
		if labelValue(s) != v {
			t.Errorf("labelValue(%q) is not a function", s)
		}
	}
	if labelValue(`sandbox.a["x"]`) == labelValue(`sandbox.a["y"]`) {
		t.Error("distinct addresses share a label value")
	}
	if got := labelValue("sandbox.ci"); got != "sandbox.ci" {
		t.Errorf("labelValue of a valid value changed it: %q", got)
	}
}

func TestParseAccount(t *testing.T) {
	tests := []struct {
		name, out string
		uid, gid  int64
		wantErr   string
		nobody    bool
	}{
		{"root image with account", "0\n0\n999\n999\nPATH=/usr/bin\nPG_MAJOR=17\nHOME=/root\n", 999, 999, "", false},
		{"image USER", "70\n70\n70\n70\nPATH=/bin\n", 70, 70, "", false},
		{"root without account", "0\n0\n-\n-\n", 0, 0, "never runs a sandbox as root", false},
		{"garbage", "what\n", 0, 0, "unexpected output", false},
		{"inspected as nobody", "65534\n65534\n999\n999\n", 999, 999, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseAccount(tt.out, "postgres", tt.nobody)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.UID != tt.uid || f.GID != tt.gid {
				t.Errorf("uid/gid = %d/%d, want %d/%d", f.UID, f.GID, tt.uid, tt.gid)
			}
			if _, ok := f.Env["HOME"]; ok {
				t.Error("kept an environment variable nobody reads")
			}
		})
	}
}

func testCatalog(t *testing.T) *config.Catalog {
	t.Helper()
	return config.DefaultCatalog()
}

func fakeProvider(t *testing.T, cs *fake.Clientset) *Provider {
	cfg := &config.Provider{Runtime: config.RuntimeKubernetes, MemoryMB: 512, Images: map[string]config.Image{
		"postgres": {Ref: "sandboxer.local/postgres:17"}, "redis": {Ref: "sandboxer.local/redis:7"},
	}}
	return newProvider(kubeclienttest.From(cs), nil, "sbx", "kubeconfig test (server https://test)", cfg, testCatalog(t))
}

// The pod, Secret, Service and NetworkPolicy of an instance: locked down,
// credentials only in the Secret.
func TestInstanceObjects(t *testing.T) {
	p := fakeProvider(t, fake.NewClientset())
	var secrets []string
	p.onSecrets = func(s ...string) { secrets = append(secrets, s...) }
	req := apply.CreateRequest{Address: "sandbox.ci", Lineage: "6f1c2b9e-0c1d-4c8e-9a3b-6c1f0e2d3a4b", Generation: 2,
		Features: config.FeatureSet{"postgres": {"vector"}, "redis": {"search"}}, Publish: config.Publish{TLS: true}}
	p.CADir = t.TempDir()
	facts := imageFacts{UID: 999, GID: 998, Env: map[string]string{"PATH": "/usr/bin:/usr/lib/postgresql/17/bin"}}
	b := &build{req: req, ns: p.ns, name: podName(req.Lineage, req.Address, req.Generation), withTLS: true,
		services: []string{"postgres", "redis"}, creds: map[string]state.Credentials{}, available: map[string][]string{}, versions: map[string]map[string]string{},
		images: map[string]config.Image{"postgres": p.cfg.Images["postgres"], "redis": p.cfg.Images["redis"]},
		facts:  map[string]imageFacts{"postgres": facts, "redis": {UID: 100, GID: 101}}}
	for _, svc := range b.services {
		app, _ := redact.NewPassword()
		admin, _ := redact.NewPassword()
		secrets = append(secrets, app.Reveal(), admin.Reveal())
		b.creds[svc] = state.Credentials{User: appUser, Password: app, AdminUser: adminUser, AdminPassword: admin, Database: "app"}
	}
	secret, pod, _, err := p.objects(b)
	if err != nil {
		t.Fatal(err)
	}
	specJSON, _ := json.Marshal(pod)
	shared := p.sharedMeta(req.Lineage)
	for _, obj := range []any{pod, p.sharedServiceSpec(shared, req.Lineage), p.sharedPolicySpec(shared, req.Lineage)} {
		j, _ := json.Marshal(obj)
		for _, s := range secrets {
			if strings.Contains(string(j), s) {
				t.Errorf("a secret is in %T: %s", obj, j)
			}
		}
	}
	if string(secret.Data[pgsvc.PasswordFile]) != b.creds["postgres"].AdminPassword.Reveal() {
		t.Error("the Secret lacks the admin password file")
	}
	spec := pod.Spec
	if *spec.AutomountServiceAccountToken || *spec.EnableServiceLinks || *spec.TerminationGracePeriodSeconds > 5 ||
		spec.RestartPolicy != corev1.RestartPolicyNever || *spec.SecurityContext.FSGroup != 998 {
		t.Errorf("pod settings: %s", specJSON)
	}
	if len(spec.InitContainers) != 1 || *spec.InitContainers[0].SecurityContext.RunAsUser != 999 {
		t.Errorf("TLS init container: %+v", spec.InitContainers)
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil || *sc.Privileged || *sc.AllowPrivilegeEscalation || !*sc.RunAsNonRoot || len(sc.Capabilities.Drop) != 1 ||
			sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("container %s security: %+v", c.Name, sc)
		}
		for _, e := range c.Env {
			if strings.Contains(strings.ToUpper(e.Name), "PASSWORD") && !strings.HasSuffix(e.Name, "_FILE") {
				t.Errorf("container %s has %s in its environment", c.Name, e.Name)
			}
		}
		if c.Resources.Limits.Memory().Value() != 512<<20 {
			t.Errorf("container %s memory limit %v", c.Name, c.Resources.Limits.Memory())
		}
	}
	// Each container mounts only its own keys of the Secret.
	for _, v := range spec.Volumes {
		if v.Secret == nil {
			continue
		}
		var keys []string
		for _, it := range v.Secret.Items {
			keys = append(keys, it.Key)
		}
		switch v.Name {
		case "secret-postgres":
			if strings.Contains(strings.Join(keys, ","), keyRedisACL) {
				t.Errorf("postgres sees %v", keys)
			}
		case "secret-redis":
			if strings.Join(keys, ",") != keyRedisACL {
				t.Errorf("redis sees %v", keys)
			}
		}
	}
	if pod.Labels[LabelManaged] != "true" || pod.Labels[LabelGeneration] != "2" || pod.Annotations[AnnotationAddress] != "sandbox.ci" {
		t.Errorf("labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	// The pod joins the lineage's shared Service by hostname and
	// subdomain; its handed-out DNS name is <pod>.<shared>.<ns>.svc.
	svc := p.sharedServiceSpec(shared, req.Lineage)
	if spec.Hostname != pod.Name || spec.Subdomain != svc.Name || svc.Name == pod.Name {
		t.Errorf("hostname %q subdomain %q, shared Service %q", spec.Hostname, spec.Subdomain, svc.Name)
	}
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("the shared Service selects %s=%s; the pod has %q", k, v, pod.Labels[k])
		}
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("shared Service: %+v", svc.Spec)
	}
	if want := pod.Name + "." + svc.Name + "." + p.ns + ".svc.cluster.local"; b.dnsNames()[0] != want {
		t.Errorf("DNS name %q, want %q", b.dnsNames()[0], want)
	}
	if len(secret.OwnerReferences) != 0 {
		t.Errorf("the Secret is owned before the pod exists: %v", secret.OwnerReferences)
	}
	np := p.sharedPolicySpec(shared, req.Lineage)
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("the shared NetworkPolicy selects %s=%s; the pod has %q", k, v, pod.Labels[k])
		}
	}
	other := p.sharedServiceSpec(p.sharedMeta("another-lineage"), "another-lineage")
	if other.Name == svc.Name || other.Spec.Selector[LabelLineage] == svc.Spec.Selector[LabelLineage] {
		t.Errorf("two lineages share %s", svc.Name)
	}
}

// RBAC denial names the verb and resource; an unreachable server wraps
// apply.ErrEngine and says where it was looked for.
func TestAPIErrors(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "sbx", errors.New("no"))
	})
	p := fakeProvider(t, cs)
	if err := p.checkNamespace(context.Background()); err != nil {
		t.Errorf("a Role without get on its namespace but with list on pods: %v", err)
	}
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	err := p.checkNamespace(context.Background())
	for _, want := range []string{"list pods in namespace sbx", `"list" on "pods"`, "https://test"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("forbidden: %v, want %q in it", err, want)
		}
	}
	cs2 := fake.NewClientset()
	p2 := fakeProvider(t, cs2)
	if err := p2.checkNamespace(context.Background()); err == nil || !strings.Contains(err.Error(), `namespace "sbx" does not exist`) {
		t.Errorf("missing namespace: %v", err)
	}
	if err := p.apiErr("create", "pods", "x", errors.New("dial tcp 127.0.0.1:1: connect: connection refused")); !errors.Is(err, apply.ErrEngine) ||
		!strings.Contains(err.Error(), "https://test") || strings.Contains(err.Error(), "Docker") {
		t.Errorf("unreachable: %v", err)
	}
}

func TestNoClusterConfigSaysWhereItLooked(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := New(context.Background(), &config.Provider{}, testCatalog(t))
	if err == nil || !strings.Contains(err.Error(), "KUBECONFIG=") || !strings.Contains(err.Error(), "not running in a pod") {
		t.Errorf("New without any configuration: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "kc")
	_, err = New(context.Background(), &config.Provider{Kubeconfig: missing}, testCatalog(t))
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("New with a missing kubeconfig: %v", err)
	}
	// A kubeconfig naming a server nobody listens on.
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), &config.Provider{Kubeconfig: kc}, testCatalog(t))
	if !errors.Is(err, apply.ErrEngine) || !strings.Contains(err.Error(), kc) || !strings.Contains(err.Error(), "https://127.0.0.1:1") {
		t.Errorf("New against nothing: %v", err)
	}
	_, err = New(context.Background(), &config.Provider{Kubeconfig: kc, Context: "nope"}, testCatalog(t))
	if err == nil || !strings.Contains(err.Error(), `no context "nope"`) {
		t.Errorf("New with an unknown context: %v", err)
	}
}

// A lineage's shared Service and NetworkPolicy are made once however many
// Creates start at once, and a second process (another Provider) that
// finds them made takes AlreadyExists as success; the first process then
// makes none again.
func TestSharedObjectsOnceUnderConcurrentFirstUse(t *testing.T) {
	cs := fake.NewClientset()
	lineage := "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	for _, p := range []*Provider{fakeProvider(t, cs), fakeProvider(t, cs)} {
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.ensureShared(context.Background(), lineage)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("ensureShared: %v", err)
			}
		}
		if err := p.ensureShared(context.Background(), lineage); err != nil {
			t.Fatal(err)
		}
	}
	creates := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" {
			creates++
		}
	}
	// Two per process (the second's fail with AlreadyExists), none more.
	if creates != 4 {
		t.Errorf("%d creates, want 4: %v", creates, cs.Actions())
	}
	svcs, _ := cs.CoreV1().Services("sbx").List(context.Background(), metav1.ListOptions{})
	nps, _ := cs.NetworkingV1().NetworkPolicies("sbx").List(context.Background(), metav1.ListOptions{})
	if len(svcs.Items) != 1 || len(nps.Items) != 1 || svcs.Items[0].Name != sharedName(lineage) {
		t.Errorf("services %v, policies %v", svcs.Items, nps.Items)
	}
}

// The calls a Create and a Delete make, on a fake clientset whose pods get
// an IP a moment after they are created (readiness stubbed, as on kwok):
// the lineage's first Create makes the shared Service and NetworkPolicy
// besides; every Create is a pod, a Secret owned by it, and one watch; a
// Delete is two deletes, each conditional on the UID the record lists.
// The real cluster's counts are TestRequestsPerSandbox's.
func TestCreateAndDeleteCalls(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		pod.UID, pod.ResourceVersion = typesUID(pod.Name), "1"
		return true, pod, cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace)
	})
	// The fake's watches replay nothing: once a watch of pods is open, the
	// namespace's pods get their IP, and it sees that.
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := cs.Tracker().Watch(pods, a.GetNamespace())
		go func() {
			time.Sleep(10 * time.Millisecond)
			l, err := cs.Tracker().List(pods, corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
			if err != nil {
				return
			}
			for _, cur := range l.(*corev1.PodList).Items {
				up := cur.DeepCopy()
				up.Status.PodIP = "192.0.2.9" // TEST-NET-1: nothing answers there
				_ = cs.Tracker().Update(pods, up, a.GetNamespace())
			}
		}()
		return true, w, err
	})
	cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sec := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).DeepCopy()
		sec.UID = typesUID("secret-" + sec.Name)
		return true, sec, cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("secrets"), sec, sec.Namespace)
	})
	p := fakeProvider(t, cs)
	p.fakeReady = true
	for _, svc := range []string{"postgres", "redis"} {
		img := p.cfg.Images[svc]
		p.rememberRef(svc+"\x00"+img.Ref, "sha256:test")
		p.caps.Put(p.capabilityKey(svc, img, "sha256:test"), imageFacts{UID: 999, GID: 999})
	}
	lineage := "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	ctx := ctxFor(t, 10*time.Second)
	verbs := func(from int) []string {
		var out []string
		for _, a := range cs.Actions()[from:] {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
		sort.Strings(out)
		return out
	}
	var recs []*state.Record
	for i, want := range [][]string{
		{"create networkpolicies", "create pods", "create secrets", "create services", "watch pods"},
		// sorted: the Secret goes first, then the pod
		{"create pods", "create secrets", "watch pods"},
	} {
		from := len(cs.Actions())
		req := apply.CreateRequest{Address: fmt.Sprintf("sandbox.c%d", i), Lineage: lineage, Generation: 1, Features: bare()}
		c, err := p.Create(ctx, req)
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if diff := cmp.Diff(want, verbs(from)); diff != "" {
			t.Errorf("Create %d calls (-want +got):\n%s", i, diff)
		}
		if c.Resources.Owned[ownedPod] == "" || c.Resources.Owned[ownedSecret] == "" {
			t.Errorf("Owned %v", c.Resources.Owned)
		}
		recs = append(recs, &state.Record{Address: req.Address, Resources: c.Resources, Credentials: c.Credentials, Generation: 1})
	}
	from := len(cs.Actions())
	if err := p.Delete(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"delete pods", "delete secrets"}, verbs(from)); diff != "" {
		t.Errorf("Delete calls (-want +got):\n%s", diff)
	}
	for _, a := range cs.Actions()[from:] {
		opts := a.(k8stesting.DeleteActionImpl).GetDeleteOptions()
		if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID == "" {
			t.Errorf("%s %s without a UID precondition", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func typesUID(name string) types.UID { return types.UID("uid-" + kit.ShortHash(name, 16)) }
