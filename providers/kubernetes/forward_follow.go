package kubernetes

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// How a forward follows its sandbox's pods (forward.go).

// follow watches the address's pods: the forward moves to the newest
// running one, closes its connection to one that is gone, and ends when
// none is left.
func (f *forward) follow() {
	pods := f.p.cs.CoreV1().Pods(f.p.ns)
	pause := 100 * time.Millisecond
	for f.ctx.Err() == nil {
		list, err := pods.List(f.ctx, metav1.ListOptions{LabelSelector: f.selector})
		if err != nil {
			if !sleepCtx(f.ctx, pause) {
				return
			}
			pause = min(2*pause, forwardBackoffMax)
			continue
		}
		seen := map[string]*corev1.Pod{}
		for i := range list.Items {
			seen[list.Items[i].Name] = &list.Items[i]
		}
		if !f.settle(seen, "") {
			return
		}
		w, err := pods.Watch(f.ctx, metav1.ListOptions{LabelSelector: f.selector, ResourceVersion: list.ResourceVersion})
		if err != nil {
			if !sleepCtx(f.ctx, pause) {
				return
			}
			continue
		}
		pause = 100 * time.Millisecond
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue // an error event: list again
			}
			gone := ""
			if ev.Type == watch.Deleted {
				delete(seen, pod.Name)
				gone = pod.Name
			} else {
				seen[pod.Name] = pod
			}
			if !f.settle(seen, gone) {
				w.Stop()
				return
			}
		}
		w.Stop()
	}
}

// settle acts on the address's pods as they are now: false when the
// forward has ended (no pod left). New connections stay on the current
// pod while it runs: a replacement's pod runs before the replace is
// done, and clients still hold the old pod's credentials until they are
// handed the new ones (Forward with the new record moves the forward at
// once). When the current pod is gone or going, they move to the
// running pod of the highest generation.
func (f *forward) settle(pods map[string]*corev1.Pod, gone string) bool {
	if gone != "" {
		f.retire(gone)
	}
	if len(pods) == 0 {
		f.end()
		return false
	}
	running := func(pod *corev1.Pod) bool {
		return pod != nil && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != ""
	}
	f.mu.Lock()
	current := f.pod
	f.mu.Unlock()
	if running(pods[current]) {
		return true
	}
	best, bestGen := "", -1
	for name, pod := range pods {
		if !running(pod) {
			continue
		}
		if gen := identityOf(pod.ObjectMeta).Generation; gen > bestGen {
			best, bestGen = name, gen
		}
	}
	// With none running (a replacement still starting), new connections
	// wait in connection's dial for one that does.
	if best != "" {
		f.retarget(best, bestGen)
	}
	return true
}
