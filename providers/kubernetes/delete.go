package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/state"
)

// Kinds of objects an instance has (apply.Resource.Kind): its pod is
// listed as one KindContainer per container.
const (
	kindContainer     = apply.KindContainer
	kindSecret        = apply.KindSecret
	kindService       = apply.KindService
	kindNetworkPolicy = apply.KindNetworkPolicy
)

// Delete removes a recorded instance: its pod, Secret, Service and
// NetworkPolicy, each explicitly (the garbage collector would remove the
// dependents too, but on its own schedule, and sandboxer promises that
// nothing labelled is left once Delete returns), and waits until the pod
// is gone. What is already gone counts as removed. A pod of the recorded
// name that is not labelled as this instance's is left alone.
func (p *Provider) Delete(ctx context.Context, rec *state.Record) error {
	if rec == nil {
		return errors.New("delete: no record")
	}
	for svc, c := range rec.Credentials {
		if w, ok := p.warm[svc]; ok {
			w.Forget(c)
		}
	}
	var errs []error
	if name := rec.Resources.Pod; name != "" {
		pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case isNotFound(err):
			errs = append(errs, p.deleteInstance(ctx, name))
		case err != nil:
			errs = append(errs, p.apiErr("get", "pods", name, err))
		case !ownedBy(pod.ObjectMeta, rec.ResourceAddress()):
			errs = append(errs, fmt.Errorf("pod %s is not labelled as sandboxer's for %s; refusing to remove it", name, rec.ResourceAddress()))
		default:
			errs = append(errs, p.deleteInstance(ctx, name))
		}
	}
	errs = append(errs, kit.RemoveCAFiles(rec))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete %s: %w", rec.Address, err)
	}
	return nil
}

// deleteInstance deletes every object named name and waits for the pod
// to be gone (its containers stopped: terminationGrace at most).
func (p *Provider) deleteInstance(ctx context.Context, name string) error {
	var g errgroup.Group
	for _, kind := range []string{kindContainer, kindSecret, kindService, kindNetworkPolicy} {
		g.Go(func() error { return p.deleteOne(ctx, kind, name) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return p.waitGone(ctx, name)
}

// deleteOne deletes one object; one already gone counts as deleted.
func (p *Provider) deleteOne(ctx context.Context, kind, name string) error {
	// Background: the call returns at once and the garbage collector
	// removes dependents; the dependents are deleted explicitly anyway.
	opts := metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)}
	var err error
	var resource string
	switch kind {
	case kindContainer:
		resource = "pods"
		err = p.cs.CoreV1().Pods(p.ns).Delete(ctx, name, opts)
	case kindSecret:
		resource = "secrets"
		err = p.cs.CoreV1().Secrets(p.ns).Delete(ctx, name, opts)
	case kindService:
		resource = "services"
		err = p.cs.CoreV1().Services(p.ns).Delete(ctx, name, opts)
	case kindNetworkPolicy:
		resource = "networkpolicies"
		err = p.cs.NetworkingV1().NetworkPolicies(p.ns).Delete(ctx, name, opts)
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	if err == nil || isNotFound(err) {
		return nil
	}
	return p.apiErr("delete", resource, name, err)
}

// waitGone waits until the pod name no longer exists.
func (p *Provider) waitGone(ctx context.Context, name string) error {
	wctx, cancel := context.WithTimeout(ctx, goneTimeout)
	defer cancel()
	err := p.watchPod(wctx, name, "", func(pod *corev1.Pod) (bool, error) { return pod == nil, nil })
	if errors.Is(err, errPodGone) {
		return nil
	}
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return fmt.Errorf("pod %s still exists %s after its deletion", name, goneTimeout)
	}
	return err
}

func ptrTo[T any](v T) *T { return &v }
