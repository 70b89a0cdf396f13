package kubernetes

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/state"
)

// TestScaleOnFakeNodes creates and deletes SANDBOXER_KUBE_SCALE sandboxes
// on kwok's fake nodes (the local cluster has them), scaleParallelism at
// a time (SANDBOXER_KUBE_SCALE_PARALLELISM) as `apply --parallelism` runs
// them: the API side at scale (parallel creates within the client's rate
// limits, one list by label, parallel deletes). Fake pods run nothing, so
// readiness is the pod's IP only (from the watch); the images' facts come
// from a real inspection first. It asserts the requests per sandbox the
// client's own transport counted (at most 3 per create, 2 writes, and 2
// per delete, besides the lineage's two shared objects) and 0 failed,
// and logs the rates and the memory of the process (the provider runs in
// it as it runs in sandboxer-kubernetes).
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
	par := scaleParallelism
	if v, _ := strconv.Atoi(os.Getenv("SANDBOXER_KUBE_SCALE_PARALLELISM")); v > 0 {
		par = v
	}
	recs := make([]*state.Record, n)
	errs := make([]error, n)
	before, beforeW := p.requests.Load(), p.writes.Load()
	start := time.Now()
	// When the last of the 2n writes went out: the client's side of the
	// throughput (rate limit, pipelining), apart from how fast the
	// scheduler and kwok give the pods their IPs.
	written := make(chan time.Duration, 1)
	go func() {
		for p.writes.Load()-beforeW < int64(2*n) && time.Since(start) < 30*time.Minute {
			time.Sleep(5 * time.Millisecond)
		}
		written <- time.Since(start)
	}()
	var wg sync.WaitGroup
	slots := make(chan struct{}, par)
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
	var allWritten time.Duration
	select {
	case allWritten = <-written:
	default: // some creates failed: fewer writes
	}
	createReqs, createWrites := p.requests.Load()-before, p.writes.Load()-beforeW
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
	if want := (n - failed) * 3; len(items) != want {
		t.Errorf("listed %d objects, want %d (2 containers and a Secret each; the shared objects not while pods are left)", len(items), want)
	}
	if failed > 0 {
		t.Errorf("%d of %d creates failed", failed, n)
	}
	// The shared objects are made on first use and asserted again each
	// sharedRecheck.
	shared := int64(sharedWrites * (1 + int(created/sharedRecheck)))
	if limit := int64(n*maxCreateRequests) + shared; createReqs > limit {
		t.Errorf("%d requests for %d creates, want ≤ %d (%d each and the shared objects)", createReqs, n, limit, maxCreateRequests)
	}
	if limit := int64(n*maxCreateWrites) + shared; createWrites > limit {
		t.Errorf("%d writes for %d creates, want ≤ %d", createWrites, n, limit)
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
	if limit := int64(n * maxDeleteRequests); deleteReqs > limit {
		t.Errorf("%d requests for %d deletes, want ≤ %d", deleteReqs, n, limit)
	}
	// The last sandbox gone, the lineage's shared objects are listed and
	// the sweep removes them.
	left, err := p.ListManaged(ctx, lineage)
	mustf(t, err, "ListManaged")
	mustf(t, p.DeleteManaged(ctx, left), "DeleteManaged")
	assertNothingLabelled(t, p, lineage)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("%d sandboxes on fake nodes, %d at a time, client limit %v QPS burst %d: create %s (%.0f/s; all written after %s, %.0f/s; %.2f requests, %.2f writes each), list %s, delete %s (%.0f/s; %.2f requests each); %d failed; process max RSS %d MiB, Go heap in use %d MiB, Go memory from the OS %d MiB",
		n, par, p.rest.QPS, p.rest.Burst, created.Round(time.Millisecond), float64(n)/created.Seconds(),
		allWritten.Round(time.Millisecond), float64(n)/allWritten.Seconds(), float64(createReqs)/float64(n), float64(createWrites)/float64(n),
		listed.Round(time.Millisecond), deleted.Round(time.Millisecond), float64(n)/deleted.Seconds(), float64(deleteReqs)/float64(n), failed,
		ru.Maxrss/1024, ms.HeapInuse>>20, ms.Sys>>20)
	if os.Getenv("SANDBOXER_KUBE_SCALE_BASELINE") != "" {
		scaleBaseline(t, p, lineage, n, par)
	}
}

// scaleBaseline is the cluster's own pace for the same pods: n bare pods
// (one container, no Secret, no shared objects), par at a time, created
// straight through the clientset and each waited for by a watch until it
// has an IP, then deleted with no grace period. What the scheduler and
// kwok allow, beside what sandboxer does.
func scaleBaseline(t *testing.T, p *Provider, lineage string, n, par int) {
	ctx := ctxFor(t, 20*time.Minute)
	run := func(what string, each func(i int) error) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		slots := make(chan struct{}, par)
		var mu sync.Mutex
		failed := 0
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				slots <- struct{}{}
				defer func() { <-slots }()
				if err := each(i); err != nil {
					mu.Lock()
					if failed == 0 {
						t.Errorf("baseline %s: %v", what, err)
					}
					failed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	name := func(i int) string { return fmt.Sprintf("sbx-base-%s-%d", kit.LineagePart(lineage, dnsSanitize), i) }
	created := run("create", func(i int) error {
		pod := &corev1.Pod{ObjectMeta: p.instanceMeta(fmt.Sprintf(`sandbox.base["%d"]`, i), lineage, 1, name(i))}
		pod.Spec.Containers = []corev1.Container{{Name: "c", Image: testRedisImage()}}
		p.placePod(pod)
		made, err := p.cs.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		return p.watchPod(ctx, pod.Name, made.ResourceVersion, func(cur *corev1.Pod) (bool, error) {
			return cur != nil && cur.Status.PodIP != "", nil
		})
	})
	deleted := run("delete", func(i int) error {
		return p.cs.CoreV1().Pods(p.ns).Delete(ctx, name(i), metav1.DeleteOptions{GracePeriodSeconds: ptrTo[int64](0)})
	})
	t.Logf("baseline, %d bare pods %d at a time straight through the clientset: create to IP %s (%.0f/s), delete %s (%.0f/s)",
		n, par, created.Round(time.Millisecond), float64(n)/created.Seconds(), deleted.Round(time.Millisecond), float64(n)/deleted.Seconds())
}
