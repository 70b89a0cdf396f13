// Package kubeclienttest adapts client-go's clientsets (its fake one, for
// unit tests) to kubeclient.Interface. Only tests import it: it links
// k8s.io/client-go/kubernetes, which kubeclient exists to keep out of the
// sandboxer binary.
package kubeclienttest

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandboxer/sandboxer/providers/kubernetes/internal/kubeclient"
)

// From wraps a client-go clientset.
func From(cs k8s.Interface) kubeclient.Interface { return wrapped{cs} }

type wrapped struct{ cs k8s.Interface }

func (w wrapped) CoreV1() kubeclient.CoreV1Interface             { return core{w.cs} }
func (w wrapped) NetworkingV1() kubeclient.NetworkingV1Interface { return networking{w.cs} }

type core struct{ cs k8s.Interface }

func (c core) Pods(ns string) kubeclient.PodInterface { return c.cs.CoreV1().Pods(ns) }
func (c core) Secrets(ns string) kubeclient.Objects[*corev1.Secret, *corev1.SecretList] {
	return c.cs.CoreV1().Secrets(ns)
}

func (c core) ConfigMaps(ns string) kubeclient.Objects[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return c.cs.CoreV1().ConfigMaps(ns)
}
func (c core) Services(ns string) kubeclient.Objects[*corev1.Service, *corev1.ServiceList] {
	return c.cs.CoreV1().Services(ns)
}
func (c core) Events(ns string) kubeclient.Objects[*corev1.Event, *corev1.EventList] {
	return c.cs.CoreV1().Events(ns)
}
func (c core) Namespaces() kubeclient.Objects[*corev1.Namespace, *corev1.NamespaceList] {
	return c.cs.CoreV1().Namespaces()
}
func (c core) Nodes() kubeclient.Objects[*corev1.Node, *corev1.NodeList] {
	return c.cs.CoreV1().Nodes()
}
func (c core) RESTClient() rest.Interface { return c.cs.CoreV1().RESTClient() }

type networking struct{ cs k8s.Interface }

func (n networking) NetworkPolicies(ns string) kubeclient.Objects[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return n.cs.NetworkingV1().NetworkPolicies(ns)
}
