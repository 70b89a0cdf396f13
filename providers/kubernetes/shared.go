package kubernetes

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"golang.org/x/sync/singleflight"

	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/services"
)

// The objects a lineage's sandboxes share: one headless Service that
// every sandbox pod joins through its hostname and subdomain (so each
// keeps a DNS name of its own, <pod>.<shared>.<namespace>.svc), and one
// NetworkPolicy selecting the lineage's pods by label. Both are named
// sharedName(lineage), carry LabelShared, and are made on the lineage's
// first Create in this process (and again a minute later, sharedRecheck),
// idempotently: an object that exists already (another process, a
// concurrent first use, an earlier run) is success. They are never
// deleted by a sandbox's Delete, which would have to ask the API server
// whether it was the last: apply and destroy remove them at the end of a
// run that removed sandboxes once no pod of the lineage is left
// (SweepShared), and ListManaged reports them only then, so the orphan
// sweep (reap, the janitor) removes them too. Until then they are cheap
// (no cluster IP, no endpoints once the pods are gone).

// sharedName names a lineage's shared Service and NetworkPolicy:
// "sbx-" and the lineage part of every instance name, never an
// instance's name (those go on with the address and generation). A
// Service name must be a DNS-1035 label: it starts with a letter.
func sharedName(lineage string) string { return "sbx-" + kit.LineagePart(lineage, dnsSanitize) }

// sharedRecheck is how long a Provider trusts that a lineage's shared
// objects exist once it made or found them. Another process may remove
// them (its apply or destroy removed what it took for the lineage's last
// sandbox while this one was about to create one): the next Create after
// this long makes them again, and the pods that joined meanwhile get
// their DNS names back with the Service. Two requests a minute per
// lineage at most.
const sharedRecheck = time.Minute

// sharedObjects remembers which lineages' shared objects this Provider
// has made (or found), and when, so only a lineage's first Create (and
// one a minute after) pays for them.
type sharedObjects struct {
	mu    sync.Mutex
	since map[string]time.Time
	sf    singleflight.Group
}

func (s *sharedObjects) isReady(lineage string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.since[lineage]
	return ok && time.Since(t) < sharedRecheck
}

func (s *sharedObjects) set(lineage string, ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since == nil {
		s.since = map[string]time.Time{}
	}
	if ready {
		s.since[lineage] = time.Now()
	} else {
		delete(s.since, lineage)
	}
}

// ensureShared makes the lineage's shared Service and NetworkPolicy
// unless this Provider has already: two creates on first use, none
// after. Concurrent first uses share one attempt; AlreadyExists is
// success.
func (p *Provider) ensureShared(ctx context.Context, lineage string) error {
	if p.shared.isReady(lineage) {
		return nil
	}
	_, err, _ := p.shared.sf.Do(lineage, func() (any, error) {
		if p.shared.isReady(lineage) {
			return nil, nil
		}
		meta := p.sharedMeta(lineage)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiWriteTimeout)
		defer cancel()
		if _, err := p.cs.CoreV1().Services(p.ns).Create(wctx, p.sharedServiceSpec(meta, lineage), metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
			return nil, p.apiErr("create", "services", meta.Name, err)
		}
		if _, err := p.cs.NetworkingV1().NetworkPolicies(p.ns).Create(wctx, p.sharedPolicySpec(meta, lineage), metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
			return nil, p.apiErr("create", "networkpolicies", meta.Name, err)
		}
		p.shared.set(lineage, true)
		return nil, nil
	})
	return err
}

// sharedMeta is the metadata of a lineage's shared objects: managed,
// the lineage's, LabelShared; no address and no generation (they belong
// to no one sandbox).
func (p *Provider) sharedMeta(lineage string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      sharedName(lineage),
		Namespace: p.ns,
		Labels: map[string]string{
			LabelManaged: "true",
			LabelLineage: labelValue(lineage),
			LabelShared:  "true",
		},
		Annotations: map[string]string{AnnotationLineage: lineage},
	}
}

// lineagePods selects the sandbox pods of a lineage (inspection and
// client pods carry no lineage).
func lineagePods(lineage string) map[string]string {
	return map[string]string{LabelManaged: "true", LabelLineage: labelValue(lineage)}
}

// servicePorts are the ports of every service of the catalog, each once
// (Redis and Valkey share 6379), in order: the shared objects serve every
// sandbox of the lineage, whatever it runs.
func (p *Provider) servicePorts() []int {
	var ports []int
	for _, svc := range p.cat.Services() {
		if port := services.Port(svc); port > 0 && !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	slices.Sort(ports)
	return ports
}

// sharedServiceSpec is the lineage's headless Service. A pod whose
// subdomain names it and whose hostname is its own name gets the DNS
// record <hostname>.<service>.<namespace>.svc, also before it is ready
// (the services' own probes decide readiness, not the kubelet).
func (p *Provider) sharedServiceSpec(meta metav1.ObjectMeta, lineage string) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: meta}
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.Selector = lineagePods(lineage)
	svc.Spec.PublishNotReadyAddresses = true
	for _, port := range p.servicePorts() {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: portNameOf(port), Port: int32(port), TargetPort: intstr.FromInt32(int32(port)), Protocol: corev1.ProtocolTCP,
		})
	}
	return svc
}

// sharedPolicySpec admits ingress to the lineage's sandboxes' ports only
// from pods of the namespace labelled as the lineage's clients
// (LabelClientOf: the shared name, which is the second label of every
// handed-out in-cluster host name) and from outside the cluster (where
// sandboxer and the hosts it serves run; an ipBlock, which by the API's
// rules does not match pod IPs on most network plugins). It takes effect
// only with a network plugin that enforces policies: the bridge plugin
// of the local cluster does not.
func (p *Provider) sharedPolicySpec(meta metav1.ObjectMeta, lineage string) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: meta}
	np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: lineagePods(lineage)}
	np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	rule := networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{
			{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelClientOf: meta.Name}}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "::/0"}},
		},
	}
	for _, port := range p.servicePorts() {
		rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{
			Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(int32(port))),
		})
	}
	np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{rule}
	return np
}

// portNameOf names a shared Service's port by its number (an
// IANA_SVC_NAME: letters, digits, '-', at least one letter).
func portNameOf(port int) string { return "tcp-" + strconv.Itoa(port) }
