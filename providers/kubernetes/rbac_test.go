package kubernetes

import (
	"bytes"
	_ "embed"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

//go:embed role.yaml
var roleYAML []byte

// The Role in role.yaml is all the provider needs: a service account
// bound to it alone, in a namespace of its own, inspects the images
// (cold cache), creates a TLS sandbox, probes, dumps through exec, lists
// and deletes. Without pods/exec, the error names the verb and resource.
func TestRoleIsEnough(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	prov, _ := newTestProvider(t)
	ctx := ctxFor(t, 5*time.Minute)
	// RBAC and service accounts are no business of the provider's own
	// clientset: the test administers with client-go's.
	admin, err := k8s.NewForConfig(prov.rest)
	mustf(t, err, "admin clientset")
	ns := "sbx-rbac-" + randomSuffix()
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	mustf(t, err, "create namespace")
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(ctxFor(t, time.Minute), ns, metav1.DeleteOptions{})
	})
	var role rbacv1.Role
	mustf(t, utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(roleYAML), 4096).Decode(&role), "parse role.yaml")
	role.Namespace = ns
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{})
	mustf(t, err, "create role")
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sandboxer"}}, metav1.CreateOptions{})
	mustf(t, err, "create service account")
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sandboxer", Namespace: ns}},
	}, metav1.CreateOptions{})
	mustf(t, err, "create role binding")
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "sandboxer",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	mustf(t, err, "token for the service account")

	kc := filepath.Join(t.TempDir(), "kubeconfig")
	ca := prov.rest.CAData
	if len(ca) == 0 && prov.rest.CAFile != "" {
		ca, err = os.ReadFile(prov.rest.CAFile)
		mustf(t, err, "read CA")
	}
	mustf(t, clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: prov.rest.Host, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"sa": {Token: tok.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"sa": {Cluster: "c", AuthInfo: "sa", Namespace: ns}},
		CurrentContext: "sa",
	}, kc), "write kubeconfig")
	cfg := *prov.cfg
	cfg.Kubeconfig, cfg.Namespace = kc, "" // the context's namespace
	p, err := New(ctx, &cfg, config.DefaultCatalog())
	mustf(t, err, "New under the Role")
	if p.ns != ns {
		t.Fatalf("namespace %q, want the context's %q", p.ns, ns)
	}
	p.SetCacheDir(t.TempDir()) // cold: the inspection runs under the Role too
	p.CADir = t.TempDir()
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.rbac", Lineage: lineage, Generation: 1, Features: bare(),
		Publish: config.Publish{TLS: true}})
	mustf(t, p.Probe(ctx, rec), "Probe")
	var dump bytes.Buffer
	mustf(t, p.Dump(ctx, rec, "postgres", &dump), "Dump through exec")
	// The forward under the Role (pods get and watch, pods/portforward):
	// PostgreSQL answers an SSLRequest through it with 'S'.
	p.cfg.Endpoint = config.EndpointPortForward
	eps, err := p.Forward(ctx, rec)
	mustf(t, err, "Forward under the Role")
	fc, err := net.DialTimeout("tcp", net.JoinHostPort(eps["postgres"].Host, strconv.Itoa(eps["postgres"].Port)), 5*time.Second)
	mustf(t, err, "connect to the forward")
	_ = fc.SetDeadline(time.Now().Add(15 * time.Second))
	_, err = fc.Write([]byte{0, 0, 0, 8, 4, 210, 22, 47}) // SSLRequest
	mustf(t, err, "SSLRequest through the forward")
	answer := make([]byte, 1)
	_, err = io.ReadFull(fc, answer)
	fc.Close()
	if err != nil || answer[0] != 'S' {
		t.Errorf("SSLRequest through the forward under the Role: %q, %v; want S", answer, err)
	}
	items, err := p.ListManaged(ctx, lineage)
	mustf(t, err, "ListManaged")
	if len(items) != 3 {
		t.Errorf("listed %d objects, want 3 (2 containers, the Secret; the shared objects not while the pod lives)", len(items))
	}

	// Take pods/exec away: the error says what is missing.
	var kept []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if !(len(r.Resources) == 1 && r.Resources[0] == "pods/exec") {
			kept = append(kept, r)
		}
	}
	cur, err := admin.RbacV1().Roles(ns).Get(ctx, role.Name, metav1.GetOptions{})
	mustf(t, err, "get role")
	cur.Rules = kept
	_, err = admin.RbacV1().Roles(ns).Update(ctx, cur, metav1.UpdateOptions{})
	mustf(t, err, "update role")
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = p.Dump(ctx, rec, "postgres", &bytes.Buffer{})
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the authorizer's cache
	}
	if err == nil || !strings.Contains(err.Error(), "pods/exec") || !strings.Contains(err.Error(), "namespace "+ns) {
		t.Errorf("Dump without pods/exec = %v, want an error naming pods/exec and the namespace", err)
	}
	mustf(t, p.Delete(ctx, rec), "Delete")
	mustf(t, p.SweepShared(ctx, lineage), "SweepShared under the Role")
	assertNothingLabelled(t, p, lineage)
}
