package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// errPodGone is a pod that was deleted while something waited for it.
var errPodGone = errors.New("pod is gone")

// watchPod follows one pod from resourceVersion rv ("" from now) and
// calls check with every version of it (nil once it is deleted) until
// check returns done or an error, or ctx ends. A watch the server closes
// (they time out) is resumed from the last version seen, or, when that
// is too old, from a fresh GET. One watch per waiting pod, not a poll:
// a thousand Creates at once would otherwise spend the client's rate
// limit on GETs.
func (p *Provider) watchPod(ctx context.Context, name, rv string, check func(*corev1.Pod) (bool, error)) error {
	pods := p.cs.CoreV1().Pods(p.ns)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	for {
		if rv == "" {
			pod, err := pods.Get(ctx, name, metav1.GetOptions{})
			switch {
			case isNotFound(err):
				pod = nil
			case err != nil:
				return p.apiErr("get", "pods", name, err)
			}
			if done, err := check(pod); done || err != nil {
				return err
			}
			if pod == nil {
				return errPodGone
			}
			rv = pod.ResourceVersion
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return p.apiErr("watch", "pods", name, err)
		}
		done, next, err := drain(ctx, w, check)
		w.Stop()
		if done || err != nil {
			return err
		}
		rv = next
	}
}

// drain reads one watch until check is satisfied, the watch ends (the
// version to resume from is returned, "" when it must restart from a GET)
// or ctx ends.
func drain(ctx context.Context, w watch.Interface, check func(*corev1.Pod) (bool, error)) (bool, string, error) {
	rv := ""
	for {
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, rv, nil
			}
			switch ev.Type {
			case watch.Error:
				return false, "", nil // usually 410 Gone: restart from a GET
			case watch.Bookmark:
				if pod, ok := ev.Object.(*corev1.Pod); ok {
					rv = pod.ResourceVersion
				}
				continue
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rv = pod.ResourceVersion
			if ev.Type == watch.Deleted {
				done, err := check(nil)
				if done || err != nil {
					return done, "", err
				}
				return false, "", errPodGone
			}
			if done, err := check(pod); done || err != nil {
				return done, rv, err
			}
		}
	}
}

// fatalWaiting are container waiting reasons that will not clear by
// themselves soon: waiting longer only hides the cause.
var fatalWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"CrashLoopBackOff": true,
}

// podFailure returns why pod will never become ready, or nil: a terminal
// phase, a container that stopped, one that cannot be created or pulled.
func podFailure(pod *corev1.Pod) error {
	if pod == nil {
		return errPodGone
	}
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s is being deleted", pod.Name)
	}
	statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			return fmt.Errorf("container %s cannot start: %s: %s", cs.Name, w.Reason, strings.TrimSpace(w.Message))
		}
		if t := cs.State.Terminated; t != nil && (!isInit(pod, cs.Name) || t.ExitCode != 0) {
			// The message is the tail of the container's log
			// (TerminationMessageFallbackToLogsOnError); Create scrubs it.
			err := fmt.Errorf("container %s exited with code %d (%s)", cs.Name, t.ExitCode, t.Reason)
			if msg := strings.TrimSpace(t.Message); msg != "" {
				err = fmt.Errorf("%w\n--- last lines of its log ---\n%s", err, msg)
			}
			return err
		}
	}
	if podPhaseTerminal(pod) {
		return fmt.Errorf("pod %s is %s: %s", pod.Name, pod.Status.Phase, strings.TrimSpace(pod.Status.Message))
	}
	return nil
}

func isInit(pod *corev1.Pod, container string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			return true
		}
	}
	return false
}

// pendingReason says why a pod has not started yet (unschedulable, an
// image being pulled), for a timeout's error.
func pendingReason(pod *corev1.Pod) string {
	if pod == nil {
		return "gone"
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("not scheduled: %s: %s", c.Reason, c.Message)
		}
	}
	return describe(pod)
}

// containerRunning reports whether the named container of pod runs.
func containerRunning(pod *corev1.Pod, name string) bool {
	if pod == nil {
		return false
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs.State.Running != nil
		}
	}
	return false
}

// imageIDOf is the image ID the kubelet reports for a container.
func imageIDOf(pod *corev1.Pod, name string) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.ImageID
		}
	}
	return ""
}
