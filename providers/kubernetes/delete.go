package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// What a record made since issue 30 says its instance owns
// (state.Resources.Owned: kind → UID).
const (
	ownedPod    = "pod"
	ownedSecret = "secret"
)

// The kinds of objects named like an instance: instanceKinds since issue
// 30, legacyKinds before it (a Service and a NetworkPolicy of its own).
var (
	instanceKinds = []string{kindContainer, kindSecret}
	legacyKinds   = []string{kindContainer, kindSecret, kindService, kindNetworkPolicy}
)

// Delete removes a recorded instance. A record that lists what it owns
// (Resources.Owned) is removed in two requests, sent together: the pod's
// delete, with no grace period, and the Secret's, each on the condition
// that the object still has the UID Create got for it (an object of the
// same name that is not the one created is left alone, with no read
// first). With no grace period the pod object is gone once the call
// returns; its containers stop on the node right after, and Delete waits
// for that over the network, not the API: until no service of the
// record accepts a connection at its endpoint any more (a replaced
// sandbox's old credentials must not work once Delete returns). The
// lineage's shared objects stay (shared.go).
//
// An older record (no Owned) is removed as it was made: the pod is read
// and checked to be labelled as this instance's, then its pod, Secret,
// Service and NetworkPolicy are deleted, each explicitly, and Delete
// waits until the pod is gone. What is already gone counts as removed.
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
	name := rec.Resources.Pod
	switch {
	case name == "":
	case len(rec.Resources.Owned) > 0:
		errs = append(errs, p.deleteOwned(ctx, rec))
	default:
		pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case isNotFound(err):
			errs = append(errs, p.deleteInstance(ctx, name, legacyKinds...))
		case err != nil:
			errs = append(errs, p.apiErr("get", "pods", name, err))
		case !ownedBy(pod.ObjectMeta, rec.ResourceAddress()):
			errs = append(errs, fmt.Errorf("pod %s is not labelled as sandboxer's for %s; refusing to remove it", name, rec.ResourceAddress()))
		default:
			errs = append(errs, p.deleteInstance(ctx, name, legacyKinds...))
		}
	}
	errs = append(errs, kit.RemoveCAFiles(rec))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete %s: %w", rec.Address, err)
	}
	return nil
}

// deleteOwned deletes the pod and the Secret a record lists, by UID.
func (p *Provider) deleteOwned(ctx context.Context, rec *state.Record) error {
	name := rec.Resources.Pod
	var g errgroup.Group
	for kind, uid := range rec.Resources.Owned {
		g.Go(func() error {
			var opts metav1.DeleteOptions
			if uid != "" {
				opts.Preconditions = &metav1.Preconditions{UID: ptrTo(types.UID(uid))}
			}
			var err error
			resource := "secrets"
			switch kind {
			case ownedPod:
				resource = "pods"
				opts.GracePeriodSeconds = ptrTo[int64](0)
				opts.PropagationPolicy = ptrTo(metav1.DeletePropagationBackground)
				err = p.cs.CoreV1().Pods(p.ns).Delete(ctx, name, opts)
			case ownedSecret:
				err = p.cs.CoreV1().Secrets(p.ns).Delete(ctx, name, opts)
			default:
				return fmt.Errorf("the record lists an object of unknown kind %q", kind)
			}
			switch {
			case err == nil, isNotFound(err):
				return nil
			case isConflict(err):
				return fmt.Errorf("%s %s is not the one created for %s (another UID); refusing to remove it", resource, name, rec.ResourceAddress())
			}
			return p.apiErr("delete", resource, name, err)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if p.fakeReady {
		return nil // fake pods (kwok) never answered
	}
	return waitUnreachable(ctx, rec)
}

// How Delete learns that a deleted pod's services stopped: a TCP connect
// to each endpoint, again every closedPoll until one fails (refused once
// the server exits, or no answer once the pod's network is gone), for
// closedWait at most: the kubelet stops the containers within the pod's
// terminationGrace of seeing it deleted, and a network where something
// else accepts every connection (a proxy in front of an unrouted pod
// range) must not hold every Delete for long. The pod object is gone
// either way, so running out of closedWait is not an error.
const (
	closedDial = 250 * time.Millisecond
	closedPoll = 50 * time.Millisecond
	closedWait = terminationGrace*time.Second + 8*time.Second
)

// waitUnreachable waits until no service of rec accepts a connection at
// its handed-out endpoint, or closedWait has passed.
func waitUnreachable(ctx context.Context, rec *state.Record) error {
	wctx, cancel := context.WithTimeout(ctx, closedWait)
	defer cancel()
	var g errgroup.Group
	for _, c := range rec.Credentials {
		if c.Host == "" || c.Port == 0 {
			continue
		}
		addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
		g.Go(func() error {
			d := net.Dialer{Timeout: closedDial}
			for {
				conn, err := d.DialContext(wctx, "tcp", addr)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return nil // refused or unanswered, or closedWait is over
				}
				_ = conn.Close()
				select {
				case <-wctx.Done():
					return ctx.Err()
				case <-time.After(closedPoll):
				}
			}
		})
	}
	return g.Wait()
}

// deleteInstance deletes the objects of kinds named name and waits for
// the pod to be gone (its containers stopped: terminationGrace at most).
func (p *Provider) deleteInstance(ctx context.Context, name string, kinds ...string) error {
	var g errgroup.Group
	for _, kind := range kinds {
		g.Go(func() error { return p.deleteOne(ctx, kind, name) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if !slices.Contains(kinds, kindContainer) {
		return nil // no pod of its own to wait for
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
