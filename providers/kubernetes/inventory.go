package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandboxer/sandboxer/apply"
)

var (
	_ apply.Inventory     = (*Provider)(nil)
	_ apply.SharedSweeper = (*Provider)(nil)
)

// ListManaged returns every object labelled as managed by sandboxer with
// lineage ("" every lineage's) in the provider's namespace: a pod as one
// KindContainer per container (service), its Secret (and, made before
// issue 30, its Service and NetworkPolicy) under their own kinds. A
// lineage's shared Service and NetworkPolicy (no address, generation -1)
// are listed only when no pod of the lineage is left, so the orphan
// sweep removes them with its last sandbox and never under a live one. Every kind is one LIST by label
// selector, whatever the number of sandboxes. The ID of each is the
// object's name (the instance's pod name, which records keep as
// Resources.Pod).
func (p *Provider) ListManaged(ctx context.Context, lineage string) ([]apply.Resource, error) {
	opts := metav1.ListOptions{LabelSelector: managedSelector(lineage)}
	// out[4] are lineages' shared objects (shared.go), reported only
	// when no pod of their lineage is left: then they are orphans.
	var out [5][]apply.Resource
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
			out[sharedIndex(s.ObjectMeta, 2)] = append(out[sharedIndex(s.ObjectMeta, 2)], resourceOf(kindService, s.ObjectMeta))
		}
		return nil
	})
	g.Go(func() error {
		l, err := p.cs.NetworkingV1().NetworkPolicies(p.ns).List(gctx, opts)
		if err != nil {
			return p.apiErr("list", "networkpolicies", "", err)
		}
		for _, n := range l.Items {
			out[sharedIndex(n.ObjectMeta, 3)] = append(out[sharedIndex(n.ObjectMeta, 3)], resourceOf(kindNetworkPolicy, n.ObjectMeta))
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	inUse := map[string]bool{}
	for _, r := range out[0] {
		inUse[r.Lineage] = true
	}
	out[4] = slices.DeleteFunc(out[4], func(r apply.Resource) bool { return inUse[r.Lineage] })
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

// sharedIndex is where ListManaged puts an object of kind index i: 4 for
// a lineage's shared one.
func sharedIndex(m metav1.ObjectMeta, i int) int {
	if m.Labels[LabelShared] == "true" {
		return 4
	}
	return i
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
	// A shared object going means this process must make it again on the
	// lineage's next Create.
	for _, it := range items {
		if (it.Kind == kindService || it.Kind == kindNetworkPolicy) && it.Name == sharedName(it.Lineage) {
			p.shared.set(it.Lineage, false)
		}
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
	var lineages []string
	for _, it := range items {
		if it.Lineage != "" && !slices.Contains(lineages, it.Lineage) {
			lineages = append(lineages, it.Lineage)
		}
	}
	for _, l := range lineages {
		errs = append(errs, p.SweepShared(ctx, l))
	}
	return errors.Join(errs...)
}

// SweepShared deletes the lineage's shared objects (shared.go) when no
// pod of it is left (apply.SharedSweeper): DeleteManaged of everything
// ListManaged returned leaves nothing labelled, and apply and destroy
// call it once per run. A LIST of at most one pod, and two more LISTs
// and deletes when none is left; the sweep, not a sandbox's Delete, pays
// it.
func (p *Provider) SweepShared(ctx context.Context, lineage string) error {
	pods, err := p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(lineagePods(lineage)).String(), Limit: 1})
	if err != nil {
		return p.apiErr("list", "pods", "", err)
	}
	if len(pods.Items) > 0 {
		return nil
	}
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(p.sharedMeta(lineage).Labels).String()}
	svcs, err := p.cs.CoreV1().Services(p.ns).List(ctx, sel)
	if err != nil {
		return p.apiErr("list", "services", "", err)
	}
	nps, err := p.cs.NetworkingV1().NetworkPolicies(p.ns).List(ctx, sel)
	if err != nil {
		return p.apiErr("list", "networkpolicies", "", err)
	}
	if len(svcs.Items) == 0 && len(nps.Items) == 0 {
		return nil
	}
	p.shared.set(lineage, false)
	var errs []error
	for _, s := range svcs.Items {
		errs = append(errs, p.deleteOne(ctx, kindService, s.Name))
	}
	for _, n := range nps.Items {
		errs = append(errs, p.deleteOne(ctx, kindNetworkPolicy, n.Name))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// A Create that made sure of them before the deletes may have made
	// its pod since (here or in another process): look again, and give
	// such a pod its Service and NetworkPolicy back.
	pods, err = p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(lineagePods(lineage)).String(), Limit: 1})
	if err != nil {
		return p.apiErr("list", "pods", "", err)
	}
	if len(pods.Items) > 0 {
		return p.ensureShared(ctx, lineage)
	}
	return nil
}
