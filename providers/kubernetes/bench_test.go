package kubernetes

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
)

// BenchmarkColdCreate is the time to ready of a postgres[vector] +
// redis[search] sandbox: through the provider ("sandboxer"), and the same
// Secret and pod created directly, with the same protocol probes on the
// pod IP ("direct"): the provider's overhead is the ratio. Deletes are
// not timed.
func BenchmarkColdCreate(b *testing.B) {
	p, _ := newTestProvider(b)
	lineage := newLineage(b, p)
	feats := config.FeatureSet{"postgres": {"vector"}, "redis": {"search"}}
	ctx := context.Background()
	// Warm the image facts and make the template (reported apart): cold
	// means a new sandbox, not a new image.
	t0 := time.Now()
	if _, err := p.Create(ctx, apply.CreateRequest{Address: "sandbox.warm", Lineage: lineage, Generation: 1, Features: feats}); err != nil {
		b.Fatal(err)
	}
	b.Logf("first create (inspects the images, makes the template): %v", time.Since(t0).Round(time.Millisecond))
	pNo, _ := newTestProvider(b)
	pNo.cfg.NoTemplate = true
	for _, side := range []struct {
		name string
		p    *Provider
	}{{"sandboxer", p}, {"sandboxer-template-false", pNo}} {
		b.Run(side.name, func(b *testing.B) {
			var ds []time.Duration
			for i := range b.N {
				req := apply.CreateRequest{Address: fmt.Sprintf("sandbox.bench-%s-%d", side.name, i), Lineage: lineage, Generation: 1, Features: feats}
				t := time.Now()
				c, err := side.p.Create(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t))
				b.StopTimer()
				if err := p.deleteInstance(ctx, c.Resources.Pod); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			reportPercentiles(b, ds)
		})
	}
	// direct: the same Secret and pod created by hand, PostgreSQL on an
	// empty data directory (the image's initdb); direct-from-template:
	// the floor, the pod sandboxer makes from the template, created by
	// hand with the same probes.
	for _, side := range []struct {
		name string
		tpl  bool
	}{{"direct", false}, {"direct-from-template", true}} {
		b.Run(side.name, func(b *testing.B) {
			var ds []time.Duration
			for i := range b.N {
				b.StopTimer()
				bld, err := p.newBuild(ctx, apply.CreateRequest{Address: fmt.Sprintf("sandbox.%s%d", side.name, i), Lineage: lineage, Generation: 1, Features: feats})
				if err != nil {
					b.Fatal(err)
				}
				if side.tpl {
					if err := p.pgTemplateFor(ctx, bld, ""); err != nil || bld.tpl == nil {
						b.Fatalf("template: %v", err)
					}
				}
				secret, pod, _, err := p.objects(bld)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t := time.Now()
				if err := directCreate(ctx, p, bld, secret, pod); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t))
				b.StopTimer()
				if err := p.deleteInstance(ctx, pod.Name, instanceKinds...); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			reportPercentiles(b, ds)
		})
	}
}

// reportPercentiles adds p50 and p99 (nearest rank) in ms to b's result.
func reportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(math.Ceil(p/100*float64(len(s))))-1)] }
	b.ReportMetric(float64(at(50))/1e6, "p50-ms")
	b.ReportMetric(float64(at(99))/1e6, "p99-ms")
}

// directCreate is what a hand-written client does: create the Secret and
// the pod, wait for the pod's IP, then the same protocol probes.
func directCreate(ctx context.Context, p *Provider, b *build, secret *corev1.Secret, pod *corev1.Pod) error {
	if _, err := p.cs.CoreV1().Secrets(p.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	made, err := p.cs.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	var ip string
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.watchPod(wctx, pod.Name, made.ResourceVersion, func(cur *corev1.Pod) (bool, error) {
		if cur != nil {
			ip = cur.Status.PodIP
		}
		return ip != "", nil
	}); err != nil {
		return err
	}
	pg, rc := b.creds["postgres"], b.creds["redis"]
	pg.Host, pg.Port, rc.Host, rc.Port = ip, pgsvc.Port, ip, redissvc.Port
	errc := make(chan error, 2)
	go func() {
		errc <- pollReady(wctx, func(ctx context.Context) error {
			conn, err := pgsvc.Ready(ctx, pg, nil)
			if err == nil {
				conn.Close(ctx)
			}
			return err
		})
	}()
	go func() {
		errc <- pollReady(wctx, func(ctx context.Context) error {
			return redissvc.Ping(ctx, rc.Host, rc.Port, rc.User, rc.Password, nil)
		})
	}()
	for range 2 {
		if err := <-errc; err != nil {
			return err
		}
	}
	return nil
}
