package config

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// The kubernetes provider block and the runtime a sandbox runs on.
//
// A configuration may hold a docker block, a kubernetes block, or both;
// each project and sandbox picks one with runtime = "docker" or
// "kubernetes" (the sandbox's setting wins). Without one, instances run on
// kubernetes when that is the only provider block and on docker otherwise,
// so every configuration written before the kubernetes provider existed
// means what it did.

// kubernetesBlockSchema lists the docker-only settings too, so that one in
// a kubernetes block gets a diagnostic saying so rather than hcl's bare
// "Unsupported argument".
var kubernetesBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "kubeconfig"},
		{Name: "context"},
		{Name: "namespace"},
		{Name: "qps"},
		{Name: "burst"},
		{Name: "endpoint"},
		{Name: "memory_mb"},
		{Name: "pids_limit"},
		{Name: "tls"},
		{Name: "storage"},
		{Name: "host"},
		{Name: "networks"},
		{Name: "publish_address"},
		{Name: "advertise_host"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "image", LabelNames: []string{"service"}}},
}

// dockerOnlySettings say, for each docker setting, what stands for it on
// Kubernetes.
var dockerOnlySettings = map[string]string{
	"host":            "the cluster is chosen with kubeconfig and context",
	"networks":        "pods share the cluster's network; in-cluster clients reach a sandbox by its Service name",
	"publish_address": "a sandbox is reached at its pod IP from where sandboxer runs and at its Service name in the cluster",
	"advertise_host":  "handed-out URLs name the pod IP and the Service name",
}

// PodAddress is the publish address recorded for Kubernetes sandboxes: they
// are reached at their pod's IP, not at a published host port.
const PodAddress = "pod-ip"

// KubernetesPublish is the exposure of a Kubernetes sandbox.
func KubernetesPublish(tls bool) Publish {
	return Publish{Address: PodAddress, AdvertiseHost: PodAddress, TLS: tls}
}

// namespaceRE is a DNS-1123 label, what Kubernetes accepts as a namespace.
var namespaceRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// The kubernetes runtime's client-side rate limit (qps, burst): requests
// per second and the burst above it. client-go's own defaults (5 and 10)
// would throttle an apply of a thousand sandboxes, two writes and a watch
// each, to ten minutes; the API server has its own flow control (APF)
// that protects it from a client that asks too much, so the client's
// limit is set high enough for 10,000 sandboxes in one apply at 300 a
// second, and lower where a cluster is shared with others.
const (
	DefaultKubeQPS   = 1000
	DefaultKubeBurst = 2000
	maxKubeRate      = 100000
)

// How the URLs a Kubernetes sandbox hands out for use from where
// sandboxer runs reach its pod (endpoint in the kubernetes block).
const (
	// EndpointPodIP hands out the pod IP: it works where pod IPs route
	// (on a node, in the cluster, on networks that route the pod range).
	EndpointPodIP = "pod-ip"
	// EndpointPortForward hands out a local port on 127.0.0.1 that the
	// process handing out the URL (serve, mcp, connect) forwards over the
	// API server to the pod.
	EndpointPortForward = "port-forward"
	// EndpointAuto is the pod IP where it answers from this host and the
	// forward where it does not; the process that hands out URLs tries
	// once (a 300 ms TCP connect to a ready sandbox's pod IP).
	EndpointAuto = "auto"
	// DefaultEndpoint is auto: on the node or in the cluster (where pod
	// IPs answer) it is the pod IP, as before the forward existed, at the
	// price of one connect per process; from a laptop or a CI runner
	// outside the cluster serve, mcp and connect hand out URLs that work
	// with no setting changed.
	DefaultEndpoint = EndpointAuto
)

// endpointModes are the values endpoint takes, in the order a diagnostic
// lists them.
var endpointModes = []string{EndpointPodIP, EndpointPortForward, EndpointAuto}

func newKubernetesProvider() *Provider {
	return &Provider{Runtime: RuntimeKubernetes, Images: map[string]Image{}, MemoryMB: DefaultMemoryMB,
		PidsLimit: DefaultPidsLimit, Publish: KubernetesPublish(false), Storage: StorageVolume,
		QPS: DefaultKubeQPS, Burst: DefaultKubeBurst, Endpoint: DefaultEndpoint}
}

func (l *loader) decodeKubernetesBlock(p *Provider, b *hcl.Block) hcl.Diagnostics {
	p.DeclRange = b.DefRange
	content, diags := b.Body.Content(kubernetesBlockSchema)
	sc := scope{locals: true}
	for _, name := range []string{"host", "networks", "publish_address", "advertise_host"} {
		if attr, ok := content.Attributes[name]; ok {
			diags = append(diags, errorDiag("Docker setting in a kubernetes provider",
				fmt.Sprintf("%s is a setting of the docker provider; the kubernetes provider does not take it (%s). Remove it, or move it to a provider \"docker\" block.", name, dockerOnlySettings[name]),
				attr.NameRange))
		}
	}
	str := func(name string) (string, *hcl.Attribute, bool) {
		attr, ok := content.Attributes[name]
		if !ok {
			return "", nil, false
		}
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		s, ok, more := typed(v, attr.Expr, cty.String, name)
		diags = append(diags, more...)
		if !ok {
			return "", attr, false
		}
		return s.AsString(), attr, true
	}
	if s, _, ok := str("kubeconfig"); ok {
		p.Kubeconfig = s
	}
	if s, _, ok := str("context"); ok {
		p.Context = s
	}
	if s, attr, ok := str("namespace"); ok {
		if !namespaceRE.MatchString(s) {
			diags = append(diags, errorDiag("Invalid namespace",
				fmt.Sprintf("%s is not a Kubernetes namespace name: up to 63 lower-case letters, digits and inner dashes.", quote(s)),
				attr.Expr.Range()))
		} else {
			p.Namespace = s
		}
	}
	if s, attr, ok := str("endpoint"); ok {
		if !slices.Contains(endpointModes, s) {
			diags = append(diags, errorDiag("Invalid endpoint",
				fmt.Sprintf("endpoint is %s; it must be %q (the pod IP, where pod IPs route), %q (a local port forwarded over the API server while serve, mcp or connect runs) or %q (the pod IP where it answers, else the forward).", quote(s), EndpointPodIP, EndpointPortForward, EndpointAuto),
				attr.Expr.Range()))
		} else {
			p.Endpoint = s
		}
	}
	if attr, ok := content.Attributes["tls"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		if bv, ok, more := typed(v, attr.Expr, cty.Bool, "tls"); ok {
			p.Publish = KubernetesPublish(bv.True())
		} else {
			diags = append(diags, more...)
		}
	}
	for _, name := range []string{"qps", "burst"} {
		attr, ok := content.Attributes[name]
		if !ok {
			continue
		}
		n, ok, more := l.boundedInt(attr, sc, 1, maxKubeRate)
		diags = append(diags, more...)
		if !ok {
			continue
		}
		if name == "qps" {
			p.QPS = n
		} else {
			p.Burst = n
		}
	}
	if p.Burst < p.QPS {
		// A burst below the rate would cap the rate at the burst.
		p.Burst = p.QPS
	}
	diags = append(diags, l.decodeLimitsAndStorage(p, content, sc)...)
	diags = append(diags, l.decodeImageBlocks(p, content.Blocks)...)
	return diags
}

// runtimeAttr decodes a project's or sandbox's runtime argument; "" when
// absent or invalid (the diagnostic says which).
func (l *loader) runtimeAttr(content *hcl.BodyContent, sc scope) (string, hcl.Diagnostics) {
	attr, ok := content.Attributes["runtime"]
	if !ok {
		return "", nil
	}
	v, diags := l.ev.eval(attr.Expr, sc)
	s, ok, more := typed(v, attr.Expr, cty.String, "runtime")
	diags = append(diags, more...)
	if !ok {
		return "", diags
	}
	switch rt := s.AsString(); rt {
	case RuntimeDocker, RuntimeKubernetes:
		return rt, diags
	default:
		return "", append(diags, errorDiag("Invalid runtime",
			fmt.Sprintf("runtime is %s; it must be %q (the provider \"docker\" block) or %q (the provider \"kubernetes\" block).", quote(rt), RuntimeDocker, RuntimeKubernetes),
			attr.Expr.Range()))
	}
}
