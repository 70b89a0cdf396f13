package kubernetes

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/state"
)

// TestScaleOnFakeNodes creates and deletes SANDBOXER_KUBE_SCALE sandboxes
// on kwok's fake nodes (the local cluster has them), scaleParallelism at
// a time as `apply --parallelism` runs them: the API side at scale
// (parallel creates within the client's rate limits, one list by label,
// parallel deletes). Starting all of them at once only made the last
// ones wait for the client's rate limiter past their ready timeout. Fake pods run nothing, so readiness is the
// pod's IP only; the images' facts come from a real inspection first.
const scaleParallelism = 100

func TestScaleOnFakeNodes(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SANDBOXER_KUBE_SCALE"))
	if n <= 0 {
		t.Skip("set SANDBOXER_KUBE_SCALE=N to create and delete N sandboxes on the cluster's kwok nodes")
	}
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := ctxFor(t, 20*time.Minute)
	for _, svc := range []string{"postgres", "redis"} {
		img, _ := p.cfg.ImageForRef(svc, "", nil)
		if _, err := p.imageFacts(ctx, svc, img); err != nil {
			t.Fatalf("inspect on the real node: %v", err)
		}
	}
	p.fakeReady = true
	p.placePod = func(pod *corev1.Pod) {
		pod.Spec.NodeSelector = map[string]string{"type": "kwok"}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
	}
	recs := make([]*state.Record, n)
	errs := make([]error, n)
	before := p.requests.Load()
	start := time.Now()
	var wg sync.WaitGroup
	slots := make(chan struct{}, scaleParallelism)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			req := apply.CreateRequest{Address: fmt.Sprintf(`sandbox.scale["%d"]`, i), Lineage: lineage, Generation: 1, Features: bare()}
			c, err := p.Create(ctx, req)
			if err != nil {
				errs[i] = err
				return
			}
			recs[i] = &state.Record{Address: req.Address, Resources: c.Resources, Credentials: c.Credentials, Generation: 1}
		}()
	}
	wg.Wait()
	created := time.Since(start)
	createReqs := p.requests.Load() - before
	failed := 0
	for _, err := range errs {
		if err != nil {
			if failed < 3 {
				t.Errorf("Create: %v", err)
			}
			failed++
		}
	}
	start = time.Now()
	items, err := p.ListManaged(ctx, lineage)
	listed := time.Since(start)
	mustf(t, err, "ListManaged")
	if want := (n - failed) * 5; len(items) != want {
		t.Errorf("listed %d objects, want %d (2 containers, secret, service, policy each)", len(items), want)
	}
	before = p.requests.Load()
	start = time.Now()
	for _, rec := range recs {
		if rec == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			if err := p.Delete(ctx, rec); err != nil {
				t.Errorf("Delete: %v", err)
			}
		}()
	}
	wg.Wait()
	deleted := time.Since(start)
	deleteReqs := p.requests.Load() - before
	assertNothingLabelled(t, p, lineage)
	t.Logf("%d sandboxes on fake nodes: create %s (%.1f requests each), list %s, delete %s (%.1f requests each); %d failed",
		n, created.Round(time.Millisecond), float64(createReqs)/float64(n), listed.Round(time.Millisecond),
		deleted.Round(time.Millisecond), float64(deleteReqs)/float64(n), failed)
}
