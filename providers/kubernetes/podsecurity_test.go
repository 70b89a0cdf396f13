package kubernetes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// A namespace that enforces the restricted Pod Security standard admits
// every pod the provider makes: the sandbox's (TLS init container
// included) and, after the root one is refused, the inspection's.
func TestRestrictedPodSecurity(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	admin, _ := newTestProvider(t)
	ctx := ctxFor(t, 4*time.Minute)
	ns := "sbx-restricted-" + randomSuffix()
	_, err := admin.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	mustf(t, err, "create namespace")
	t.Cleanup(func() { _ = admin.cs.CoreV1().Namespaces().Delete(ctxFor(t, time.Minute), ns, metav1.DeleteOptions{}) })
	cfg := *admin.cfg
	cfg.Namespace = ns
	p, err := New(ctx, &cfg, config.DefaultCatalog())
	mustf(t, err, "New")
	p.SetCacheDir(t.TempDir()) // cold: the inspection runs there too
	p.CADir = t.TempDir()
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.restricted", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {"vector"}, "redis": {"search"}}, Publish: config.Publish{TLS: true}})
	mustf(t, p.Probe(ctx, rec), "Probe")
	mustf(t, p.Delete(ctx, rec), "Delete")
	mustf(t, p.SweepShared(ctx, lineage), "SweepShared") // as apply does at the end of a run
	assertNothingLabelled(t, p, lineage)
}
