package kubernetes

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/state"
)

// TestPoolBurstOnFakeNodes: SANDBOXER_KUBE_BURST=N agents claim at once
// from a warm pool of N whose pods run on kwok's fake nodes, through the
// broker the library runs, on the bbolt state. Fake pods run no server,
// so readiness is the pod's IP (as in TestScaleOnFakeNodes) and the
// claim's rotation binds credentials without a protocol round trip
// (offlineRotator); everything else is the claim path as it runs. It
// asserts that the burst made no API request and that every claimant got
// its own member and fresh credentials, and logs p50/p99.
func TestPoolBurstOnFakeNodes(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SANDBOXER_KUBE_BURST"))
	if n <= 0 {
		t.Skip("set SANDBOXER_KUBE_BURST=N to claim N at once from a pool of N on the cluster's kwok nodes")
	}
	p, _ := newTestProvider(t)
	ctx := ctxFor(t, 15*time.Minute)
	img, _ := p.cfg.ImageForRef("redis", "", nil)
	if _, err := p.imageFacts(ctx, "redis", img); err != nil {
		t.Fatalf("inspect on the real node: %v", err)
	}
	p.fakeReady = true
	p.placePod = func(pod *corev1.Pod) {
		pod.Spec.NodeSelector = map[string]string{"type": "kwok"}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
	}
	b, store := poolBroker(t, p, n)
	b.Rotator = offlineRotator{}
	start := time.Now()
	st, err := b.FillPool(ctx, "sandbox.warm")
	mustf(t, err, "FillPool")
	t.Logf("pool of %d filled in %s", st.Ready, time.Since(start).Round(time.Millisecond))
	snap, err := store.Inspect(ctx)
	mustf(t, err, "Inspect")
	cleanupLineage(t, p, snap.Lineage)
	t.Cleanup(func() {
		snap, err := store.Inspect(context.Background())
		if err != nil {
			t.Errorf("Inspect: %v", err)
			return
		}
		var wg sync.WaitGroup
		for _, rec := range snap.Records {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.Delete(context.Background(), rec); err != nil {
					t.Errorf("Delete %s: %v", rec.Address, err)
				}
			}()
		}
		wg.Wait()
	})
	if st.Ready != n {
		t.Fatalf("pool after fill: %+v", st)
	}

	before := p.requests.Load()
	lat := make([]time.Duration, n)
	res := make([]*ondemand.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			t0 := time.Now()
			res[i], errs[i] = b.Request(ctx, ondemand.Request{Address: "sandbox.warm", Key: fmt.Sprintf("agent%d", i)})
			lat[i] = time.Since(t0)
		}()
	}
	burst := time.Now()
	close(gate)
	wg.Wait()
	wall := time.Since(burst)
	reqs := p.requests.Load() - before

	members := map[string]bool{}
	passwords := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		if !res[i].FromPool {
			t.Errorf("claim %d was provisioned cold", i)
			continue
		}
		rec, err := store.Get(ctx, fmt.Sprintf(`sandbox.warm["agent%d"]`, i))
		mustf(t, err, "Get")
		if members[rec.LabelAddress] {
			t.Errorf("member %s handed out twice", rec.LabelAddress)
		}
		members[rec.LabelAddress] = true
		pw := rec.Credentials["redis"].Password.Reveal()
		if passwords[pw] {
			t.Errorf("a password handed out twice")
		}
		passwords[pw] = true
	}
	if reqs != 0 {
		t.Errorf("%d claims made %d API requests; want none", n, reqs)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("%d claims at once from a pool of %d: p50 %s, p99 %s, max %s, all done in %s; %d API requests",
		n, n, lat[n/2].Round(10*time.Microsecond), lat[min(n-1, n*99/100)].Round(10*time.Microsecond),
		lat[n-1].Round(10*time.Microsecond), wall.Round(time.Millisecond), reqs)
}

// offlineRotator binds fresh random app passwords without reaching the
// instance: fake pods run no server to rotate them on.
type offlineRotator struct{}

func (offlineRotator) Rotate(ctx context.Context, rec *state.Record) (map[string]state.Credentials, error) {
	out := map[string]state.Credentials{}
	for svc, c := range rec.Credentials {
		c.Password = state.Secret(rand.Text())
		out[svc] = c
	}
	return out, nil
}
