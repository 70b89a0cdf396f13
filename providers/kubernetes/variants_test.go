package kubernetes

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// The image variants (images/variants) differ where an image can differ:
// a postgres account at uid 70 (Alpine), postgres:18's data layout, a
// redis entrypoint that loads every module it ships (redis:8). The pod
// must run each as the image expects, from what the inspection read.
func TestImageVariants(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	for _, tc := range []struct{ postgres, redis string }{
		{"sandboxer.local/variant:postgres-uid70", "sandboxer.local/variant:redis-autoload"},
		{"sandboxer.local/variant:postgres-18layout", testRedisImage()},
	} {
		t.Run(tc.postgres, func(t *testing.T) {
			p, _ := newTestProvider(t)
			p.cfg.Images = map[string]config.Image{
				"postgres": {Ref: tc.postgres},
				"redis":    {Ref: tc.redis, Modules: map[string]string{"search": testRedisSearchModule()}},
			}
			lineage := newLineage(t, p)
			ctx := ctxFor(t, 3*time.Minute)
			caps, err := p.Check(ctx, []plan.ImageUse{{Service: "postgres"}, {Service: "redis"}})
			mustf(t, err, "Check")
			if _, ok := caps[plan.ImageUse{Service: "redis"}].Features["search"]; !ok {
				t.Errorf("Check: redis image %s lacks search: %+v", tc.redis, caps)
			}
			rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.variant", Lineage: lineage, Generation: 1,
				Features: config.FeatureSet{"postgres": {"vector"}, "redis": {"search"}}})
			mustf(t, p.Probe(ctx, rec), "Probe")
			pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, rec.Resources.Pod, metav1.GetOptions{})
			mustf(t, err, "get pod")
			f, err := p.imageFacts(ctx, "postgres", p.cfg.Images["postgres"])
			mustf(t, err, "facts")
			if got := *pod.Spec.Containers[0].SecurityContext.RunAsUser; got != f.UID || (tc.postgres == "sandboxer.local/variant:postgres-uid70" && got != 70) {
				t.Errorf("postgres runs as uid %d; the image's account is %d", got, f.UID)
			}
		})
	}
}
