package kubernetes

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/state"
)

// The API requests of a sandbox, counted by the client's own transport
// (Provider.requests, Provider.writes) on the real cluster with real
// pods: a lineage's first Create makes its two shared objects besides;
// every other costs at most 2 writes and 3 requests in all (pod, Secret,
// the watch that brings the pod's IP), one at a time and many at once; a
// Delete costs at most 2 requests. Once the last sandbox is gone, the
// shared objects are what the lineage's listing holds, and the sweep
// removes them.
const (
	maxCreateRequests = 3
	maxCreateWrites   = 2
	maxDeleteRequests = 2
	sharedWrites      = 2
)

func TestRequestsPerSandbox(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := ctxFor(t, 5*time.Minute)
	// An image's inspection is a cost of the image, not of a sandbox.
	for _, svc := range []string{"postgres", "redis"} {
		img, _ := p.cfg.ImageForRef(svc, "", nil)
		_, err := p.imageFacts(ctx, svc, img)
		mustf(t, err, "inspect %s", svc)
	}
	counted := func(f func()) (requests, writes int64) {
		r, w := p.requests.Load(), p.writes.Load()
		f()
		return p.requests.Load() - r, p.writes.Load() - w
	}
	var recs []*state.Record
	create := func(addr string) {
		req := apply.CreateRequest{Address: addr, Lineage: lineage, Generation: 1, Features: bare()}
		c, err := p.Create(ctx, req)
		mustf(t, err, "Create %s", addr)
		recs = append(recs, &state.Record{Address: addr, Resources: c.Resources, Credentials: c.Credentials, Generation: 1})
	}
	reqs, writes := counted(func() { create("sandbox.first") })
	t.Logf("first Create of the lineage: %d requests, %d writes", reqs, writes)
	// The process's first sandbox of an image also reads the template's
	// manifest once (pgtemplate.go; remembered after): one GET more.
	const templateLookup = 1
	if reqs > maxCreateRequests+sharedWrites+templateLookup || writes != maxCreateWrites+sharedWrites {
		t.Errorf("first Create: %d requests, %d writes; want ≤ %d and %d", reqs, writes, maxCreateRequests+sharedWrites+templateLookup, maxCreateWrites+sharedWrites)
	}
	for i := range 3 {
		reqs, writes := counted(func() { create(fmt.Sprintf("sandbox.seq%d", i)) })
		t.Logf("Create %d: %d requests, %d writes", i, reqs, writes)
		if reqs > maxCreateRequests || writes > maxCreateWrites {
			t.Errorf("Create %d: %d requests, %d writes; want ≤ %d and ≤ %d", i, reqs, writes, maxCreateRequests, maxCreateWrites)
		}
	}
	const together = 6
	reqs, writes = counted(func() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range together {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := apply.CreateRequest{Address: fmt.Sprintf("sandbox.par%d", i), Lineage: lineage, Generation: 1, Features: bare()}
				c, err := p.Create(ctx, req)
				if err != nil {
					t.Errorf("Create: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				recs = append(recs, &state.Record{Address: req.Address, Resources: c.Resources, Credentials: c.Credentials, Generation: 1})
			}()
		}
		wg.Wait()
	})
	t.Logf("%d Creates at once: %d requests, %d writes", together, reqs, writes)
	if reqs > together*maxCreateRequests || writes > together*maxCreateWrites {
		t.Errorf("%d Creates at once: %d requests, %d writes; want ≤ %d and ≤ %d", together, reqs, writes, together*maxCreateRequests, together*maxCreateWrites)
	}
	for _, rec := range recs {
		if len(rec.Resources.Owned) != 2 {
			t.Errorf("%s owns %v, want its pod and its Secret", rec.Address, rec.Resources.Owned)
		}
		reqs, _ := counted(func() { mustf(t, p.Delete(ctx, rec), "Delete %s", rec.Address) })
		if reqs > maxDeleteRequests {
			t.Errorf("Delete %s: %d requests, want ≤ %d", rec.Address, reqs, maxDeleteRequests)
		}
	}
	// The pods are gone from the API at once (no grace period); what is
	// left of the lineage is its shared Service and NetworkPolicy.
	left, err := p.ListManaged(ctx, lineage)
	mustf(t, err, "ListManaged")
	kinds := map[string]int{}
	for _, it := range left {
		kinds[it.Kind]++
		if it.Name != sharedName(lineage) {
			t.Errorf("left behind: %s %s (%s)", it.Kind, it.Name, it.Address)
		}
	}
	if len(left) != 2 || kinds[kindService] != 1 || kinds[kindNetworkPolicy] != 1 {
		t.Errorf("after the last Delete the lineage holds %v, want its shared Service and NetworkPolicy", left)
	}
	mustf(t, p.DeleteManaged(ctx, left), "DeleteManaged")
	assertNothingLabelled(t, p, lineage)
}

// A record made before issue 30 lists nothing it owns (Resources.Owned):
// its instance has a Service and a NetworkPolicy of its own, named like
// its pod; Delete removes all four, as the older sandboxer made them.
func TestRecordWithoutOwnedIsDeletedAsMade(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := ctxFor(t, 3*time.Minute)
	req := apply.CreateRequest{Address: "sandbox.old", Lineage: lineage, Generation: 1, Features: bare()}
	c, err := p.Create(ctx, req)
	mustf(t, err, "Create")
	name := c.Resources.Pod
	// What the older layout added: a Service and a NetworkPolicy of the
	// instance's own, labelled as its.
	meta := p.instanceMeta(req.Address, lineage, 1, name)
	svc := &corev1.Service{ObjectMeta: meta}
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.Selector = map[string]string{LabelPod: name}
	_, err = p.cs.CoreV1().Services(p.ns).Create(ctx, svc, metav1.CreateOptions{})
	mustf(t, err, "create the old layout's Service")
	np := &networkingv1.NetworkPolicy{ObjectMeta: meta}
	np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{LabelPod: name}}
	_, err = p.cs.NetworkingV1().NetworkPolicies(p.ns).Create(ctx, np, metav1.CreateOptions{})
	mustf(t, err, "create the old layout's NetworkPolicy")
	res := c.Resources
	res.Owned = nil
	rec := &state.Record{Address: req.Address, Resources: res, Credentials: c.Credentials, Generation: 1}
	mustf(t, p.Delete(ctx, rec), "Delete")
	for kind, get := range map[string]func() error{
		"pod":     func() error { _, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, name, metav1.GetOptions{}); return err },
		"secret":  func() error { _, err := p.cs.CoreV1().Secrets(p.ns).Get(ctx, name, metav1.GetOptions{}); return err },
		"service": func() error { _, err := p.cs.CoreV1().Services(p.ns).Get(ctx, name, metav1.GetOptions{}); return err },
		"networkpolicy": func() error {
			_, err := p.cs.NetworkingV1().NetworkPolicies(p.ns).Get(ctx, name, metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !isNotFound(err) {
			t.Errorf("%s %s after Delete: %v, want not found", kind, name, err)
		}
	}
}

// A record's Owned UIDs guard its Delete: a pod of the same name that is
// not the one created (another UID) is left alone, with an error.
func TestDeleteSparesAnotherObjectOfTheName(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := ctxFor(t, 3*time.Minute)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.guard", Lineage: lineage, Generation: 1, Features: bare()})
	other := *rec
	other.Resources.Owned = map[string]string{ownedPod: "00000000-0000-0000-0000-000000000000"}
	if err := p.Delete(ctx, &other); err == nil {
		t.Fatal("Delete with another pod's UID succeeded")
	}
	if _, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, rec.Resources.Pod, metav1.GetOptions{}); err != nil {
		t.Errorf("the pod is gone after a refused Delete: %v", err)
	}
}
