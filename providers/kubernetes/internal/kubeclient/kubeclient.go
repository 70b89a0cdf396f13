// Package kubeclient is the part of the Kubernetes API the kubernetes
// runtime uses, typed like client-go's clientset (the same method
// signatures, so client-go's fake clientset stands in for it in unit
// tests, see kubeclienttest) but built on a scheme that holds only the
// groups sandboxer touches: core/v1 and networking/v1.
//
// Why not k8s.io/client-go/kubernetes: Go initialises every linked
// package when a program starts, and that clientset registers every API
// group there is. Measured on this machine, linking it added 15–40 ms and
// about 12 MiB to the start of every sandboxer command, a plan of Docker
// sandboxes included; this package adds under 2 ms.
//
// What this package must never do: import k8s.io/client-go/kubernetes or
// its scheme (the repository's boundary test enforces it).
package kubeclient

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is the clientset.
type Interface interface {
	CoreV1() CoreV1Interface
	NetworkingV1() NetworkingV1Interface
}

// Objects is one resource of one namespace (or a cluster-scoped one).
type Objects[T, L any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// PodInterface adds the log subresource to pods.
type PodInterface interface {
	Objects[*corev1.Pod, *corev1.PodList]
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// CoreV1Interface is the core group.
type CoreV1Interface interface {
	Pods(namespace string) PodInterface
	Secrets(namespace string) Objects[*corev1.Secret, *corev1.SecretList]
	ConfigMaps(namespace string) Objects[*corev1.ConfigMap, *corev1.ConfigMapList]
	Services(namespace string) Objects[*corev1.Service, *corev1.ServiceList]
	Events(namespace string) Objects[*corev1.Event, *corev1.EventList]
	Namespaces() Objects[*corev1.Namespace, *corev1.NamespaceList]
	Nodes() Objects[*corev1.Node, *corev1.NodeList]
	// RESTClient is for subresources without a typed call (pods/exec).
	RESTClient() rest.Interface
}

// NetworkingV1Interface is the networking.k8s.io group.
type NetworkingV1Interface interface {
	NetworkPolicies(namespace string) Objects[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList]
}

// Scheme holds the types this package decodes; ParameterCodec turns
// option structs into query parameters (as client-go's scheme does).
// They are built per Clientset, never at package start.
type Scheme struct {
	*runtime.Scheme
	Codecs         serializer.CodecFactory
	ParameterCodec runtime.ParameterCodec
}

// NewScheme registers core/v1 and networking/v1.
func NewScheme() (*Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register core/v1: %w", err)
	}
	if err := networkingv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register networking/v1: %w", err)
	}
	return &Scheme{Scheme: s, Codecs: serializer.NewCodecFactory(s), ParameterCodec: runtime.NewParameterCodec(s)}, nil
}

// Clientset is Interface on a real API server.
type Clientset struct {
	scheme     *Scheme
	core       *rest.RESTClient
	networking *rest.RESTClient
}

var _ Interface = (*Clientset)(nil)

// NewForConfig makes the clientset. Both groups share one HTTP client and
// one client-side rate limiter (from c.QPS and c.Burst), as client-go's
// clientset does.
func NewForConfig(c *rest.Config) (*Clientset, error) {
	sch, err := NewScheme()
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(c)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		burst := cfg.Burst
		if burst <= 0 {
			burst = int(cfg.QPS)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, burst)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	core, err := groupClient(cfg, httpClient, sch, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	networking, err := groupClient(cfg, httpClient, sch, "/apis", networkingv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &Clientset{scheme: sch, core: core, networking: networking}, nil
}

func groupClient(c *rest.Config, h *http.Client, sch *Scheme, apiPath string, gv interface{ String() string }) (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(c)
	switch gv.String() {
	case corev1.SchemeGroupVersion.String():
		g := corev1.SchemeGroupVersion
		cfg.GroupVersion = &g
	default:
		g := networkingv1.SchemeGroupVersion
		cfg.GroupVersion = &g
	}
	cfg.APIPath = apiPath
	cfg.NegotiatedSerializer = sch.Codecs.WithoutConversion()
	rc, err := rest.RESTClientForConfigAndClient(cfg, h)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", gv, err)
	}
	return rc, nil
}

// Scheme is the clientset's scheme (for the exec API's parameters).
func (c *Clientset) Scheme() *Scheme { return c.scheme }

func (c *Clientset) CoreV1() CoreV1Interface { return coreV1{c} }

func (c *Clientset) NetworkingV1() NetworkingV1Interface { return networkingV1{c} }

type coreV1 struct{ c *Clientset }

func objects[T interface {
	runtime.Object
	metav1.Object
}, L runtime.Object](c *Clientset, rc *rest.RESTClient, resource, ns string, newT func() T, newL func() L) *gentype.ClientWithList[T, L] {
	return gentype.NewClientWithList[T, L](resource, rc, c.scheme.ParameterCodec, ns, newT, newL)
}

type pods struct {
	*gentype.ClientWithList[*corev1.Pod, *corev1.PodList]
	c  *Clientset
	ns string
}

// GetLogs is client-go's pods.GetLogs.
func (p pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.c.core.Get().Namespace(p.ns).Name(name).Resource("pods").SubResource("log").VersionedParams(opts, p.c.scheme.ParameterCodec)
}

func (v coreV1) Pods(ns string) PodInterface {
	return pods{objects(v.c, v.c.core, "pods", ns, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} }), v.c, ns}
}

func (v coreV1) Secrets(ns string) Objects[*corev1.Secret, *corev1.SecretList] {
	return objects(v.c, v.c.core, "secrets", ns, func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

func (v coreV1) ConfigMaps(ns string) Objects[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return objects(v.c, v.c.core, "configmaps", ns, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (v coreV1) Services(ns string) Objects[*corev1.Service, *corev1.ServiceList] {
	return objects(v.c, v.c.core, "services", ns, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
}

func (v coreV1) Events(ns string) Objects[*corev1.Event, *corev1.EventList] {
	return objects(v.c, v.c.core, "events", ns, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

func (v coreV1) Namespaces() Objects[*corev1.Namespace, *corev1.NamespaceList] {
	return objects(v.c, v.c.core, "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

func (v coreV1) Nodes() Objects[*corev1.Node, *corev1.NodeList] {
	return objects(v.c, v.c.core, "nodes", "", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

func (v coreV1) RESTClient() rest.Interface { return v.c.core }

type networkingV1 struct{ c *Clientset }

func (v networkingV1) NetworkPolicies(ns string) Objects[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return objects(v.c, v.c.networking, "networkpolicies", ns, func() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} },
		func() *networkingv1.NetworkPolicyList { return &networkingv1.NetworkPolicyList{} })
}
