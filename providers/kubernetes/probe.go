package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/state"
)

// Probe checks that every service of a recorded instance answers its
// protocol probe with the handed-out credentials on the pod's IP, all
// services at once, and asks the API server about the pod at the same
// time. A login alone is not enough: a pod deleted with no grace period
// is gone from the API server (and its Secret and Service with it, by
// their owner references) while its containers still answer for a
// moment. A pod that is gone, deleted, finished or has a stopped
// container gives an error wrapping apply.ErrNotFound at once, without
// waiting for the services' probes to time out (a dead pod's IP does not
// refuse, it times out); an API server that cannot be reached, one
// wrapping apply.ErrEngine unless the services answered.
func (p *Provider) Probe(ctx context.Context, rec *state.Record) error {
	if rec == nil {
		return errors.New("probe: no record")
	}
	if rec.Resources.Pod == "" {
		return fmt.Errorf("probe %s: no pod recorded: %w", rec.Address, apply.ErrNotFound)
	}
	scrub := redact.ForRecord(rec)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	svcs := slices.Sorted(maps.Keys(rec.Credentials))
	errs := make([]error, len(svcs))
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		var wg sync.WaitGroup
		for i, svc := range svcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.protocolProbe(pctx, rec.Credentials[svc], svc)
			}()
		}
		wg.Wait()
	}()
	pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, rec.Resources.Pod, metav1.GetOptions{})
	switch {
	case isNotFound(err):
		return fmt.Errorf("probe %s: pod %s: %w", rec.Address, rec.Resources.Pod, apply.ErrNotFound)
	case err != nil:
		<-probed
		if firstErr(errs) == nil {
			return nil // it answered meanwhile: alive, whatever the API server says
		}
		return scrub.Err(fmt.Errorf("probe %s: %w", rec.Address, p.apiErr("get", "pods", rec.Resources.Pod, err)))
	}
	if why := deadReason(pod, rec); why != "" {
		return fmt.Errorf("probe %s: pod %s %s: %w", rec.Address, pod.Name, why, apply.ErrNotFound)
	}
	<-probed
	for i, err := range errs {
		if err != nil {
			return scrub.Err(fmt.Errorf("probe %s: %s: %w", rec.Address, svcs[i], err))
		}
	}
	return nil
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// deadReason says why pod can never serve rec again ("" when it may): it
// is being deleted, has finished, or a service's container stopped (the
// pod never restarts one: a restarted PostgreSQL would come back with an
// empty data directory on some storage, and a dead sandbox is replaced).
func deadReason(pod *corev1.Pod, rec *state.Record) string {
	if pod.DeletionTimestamp != nil {
		return "is being deleted"
	}
	if podPhaseTerminal(pod) {
		return "is " + string(pod.Status.Phase)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if _, ok := rec.Resources.Containers[cs.Name]; !ok {
			continue
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("has container %s exited with code %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	return ""
}

func (p *Provider) protocolProbe(ctx context.Context, c state.Credentials, svc string) error {
	pctx, cancel := context.WithTimeout(ctx, p.probeTimeout())
	defer cancel()
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		return err
	}
	w, ok := p.warm[svc]
	if !ok {
		return fmt.Errorf("service %s is not supported by the kubernetes provider", svc)
	}
	return w.Ping(pctx, c, tlsConf)
}
