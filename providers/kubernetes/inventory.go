package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
)

var _ apply.Inventory = (*Provider)(nil)

// ListManaged returns every object labelled as managed by sandboxer with
// lineage ("" every lineage's) in the provider's namespace: a pod as one
// KindContainer per container (service), its Secret, Service and
// NetworkPolicy under their own kinds. Every kind is one LIST by label
// selector, whatever the number of sandboxes. The ID of each is the
// object's name (the instance's pod name, which records keep as
// Resources.Pod).
func (p *Provider) ListManaged(ctx context.Context, lineage string) ([]apply.Resource, error) {
	opts := metav1.ListOptions{LabelSelector: managedSelector(lineage)}
	var out [4][]apply.Resource
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		l, err := p.cs.CoreV1().Pods(p.ns).List(gctx, opts)
		if err != nil {
			return p.apiErr("list", "pods", "", err)
		}
		for _, pod := range l.Items {
			for _, c := range pod.Spec.Containers {
				r := resourceOf(kindContainer, pod.ObjectMeta)
				r.Service = c.Name
				out[0] = append(out[0], r)
			}
		}
		return nil
	})
	g.Go(func() error {
		l, err := p.cs.CoreV1().Secrets(p.ns).List(gctx, opts)
		if err != nil {
			return p.apiErr("list", "secrets", "", err)
		}
		for _, s := range l.Items {
			out[1] = append(out[1], resourceOf(kindSecret, s.ObjectMeta))
		}
		return nil
	})
	g.Go(func() error {
		l, err := p.cs.CoreV1().Services(p.ns).List(gctx, opts)
		if err != nil {
			return p.apiErr("list", "services", "", err)
		}
		for _, s := range l.Items {
			out[2] = append(out[2], resourceOf(kindService, s.ObjectMeta))
		}
		return nil
	})
	g.Go(func() error {
		l, err := p.cs.NetworkingV1().NetworkPolicies(p.ns).List(gctx, opts)
		if err != nil {
			return p.apiErr("list", "networkpolicies", "", err)
		}
		for _, n := range l.Items {
			out[3] = append(out[3], resourceOf(kindNetworkPolicy, n.ObjectMeta))
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var all []apply.Resource
	for _, rs := range out {
		for _, r := range rs {
			// The label holds labelValue(lineage); the annotation the
			// lineage itself.
			if lineage == "" || r.Lineage == lineage {
				all = append(all, r)
			}
		}
	}
	return all, nil
}

func resourceOf(kind string, m metav1.ObjectMeta) apply.Resource {
	id := identityOf(m)
	return apply.Resource{Kind: kind, ID: m.Name, Name: m.Name, Address: id.Address, Lineage: id.Lineage, Generation: id.Generation}
}

// deleteParallelism bounds DeleteManaged's concurrent deletes: enough to
// sweep a thousand sandboxes in seconds, within the client's rate limit.
const deleteParallelism = 32

// DeleteManaged deletes what ListManaged returned: pods first (and waits
// for them to be gone), then the other kinds. What is gone already
// counts as deleted; every item is tried and all failures are returned.
func (p *Provider) DeleteManaged(ctx context.Context, items []apply.Resource) error {
	order := map[string]int{kindContainer: 0, kindSecret: 1, kindService: 2, kindNetworkPolicy: 3}
	type key struct{ kind, name string }
	seen := map[key]bool{}
	var todo []key
	for _, it := range items {
		k := key{it.Kind, it.ID}
		if _, ok := order[it.Kind]; !ok {
			return fmt.Errorf("unknown kind %q of %s", it.Kind, it.Name)
		}
		if !seen[k] {
			seen[k] = true
			todo = append(todo, k)
		}
	}
	sort.SliceStable(todo, func(i, j int) bool { return order[todo[i].kind] < order[todo[j].kind] })
	pods := func(ks []key, want bool) []key {
		var out []key
		for _, k := range ks {
			if (k.kind == kindContainer) == want {
				out = append(out, k)
			}
		}
		return out
	}
	var errs []error
	for _, phase := range [][]key{pods(todo, true), pods(todo, false)} {
		errc := make(chan error, len(phase))
		var g errgroup.Group
		g.SetLimit(deleteParallelism)
		for _, k := range phase {
			g.Go(func() error {
				err := p.deleteOne(ctx, k.kind, k.name)
				if err == nil && k.kind == kindContainer {
					if err = p.waitGone(ctx, k.name); err == nil {
						err = p.removeOrphanCAFile(k.name)
					}
				}
				if err != nil {
					errc <- fmt.Errorf("%s %s: %w", k.kind, k.name, err)
				}
				return nil
			})
		}
		_ = g.Wait()
		close(errc)
		for err := range errc {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
