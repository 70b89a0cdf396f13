package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/providers/kubernetes/internal/kubeclient"
	"github.com/sandboxer/sandboxer/services"
)

// Defaults for the timeouts a Provider uses.
const (
	DefaultReadyTimeout = 90 * time.Second
	DefaultProbeTimeout = 3 * time.Second
	// cleanupTimeout bounds removing a failed instance; cleanup runs on a
	// fresh context so an interrupted Create still cleans up.
	cleanupTimeout = 60 * time.Second
	// reachTimeout bounds New's reachability check.
	reachTimeout = 10 * time.Second
	// goneTimeout bounds how long a delete waits for the pod to be gone.
	goneTimeout = 60 * time.Second
)

// Provider drives one namespace of one Kubernetes cluster. It is safe for
// concurrent use once configured; set the exported fields before the
// first call.
type Provider struct {
	cs   kubeclient.Interface
	rest *rest.Config // nil with a fake clientset (unit tests): no exec
	// params encodes the exec API's options (the clientset's scheme).
	params runtime.ParameterCodec
	ns     string
	// where says where the cluster was looked for (the kubeconfig file or
	// "in-cluster config", and the server URL), for errors.
	where string
	cfg   *config.Provider
	cat   *config.Catalog

	// ReadyTimeout bounds how long Create waits for the pod to run and
	// each service to answer its protocol probe. Zero means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// ForkFills is how many copies' fill streams a fork runs at once;
	// zero means DefaultForkFills.
	ForkFills int
	// ForkStall is how long a fork's fill stream may move no bytes
	// before it is cut and sent again (kit.WatchProgress); zero means
	// DefaultForkStall.
	ForkStall time.Duration
	// ProbeTimeout bounds each service's check in Probe. Zero means
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// CADir is where the CA files of TLS instances are written for clients
	// (SANDBOXER_<SVC>_CA); TLS instances cannot be created without it.
	CADir string

	// caps remembers what each image provides (capabilities.go).
	caps capCache
	// warm is each service's prober: PostgreSQL's keeps a logged-in
	// connection per probed instance, so a repeated probe (serve's cache
	// hits) is a round trip, not a SCRAM login. Made once, only read.
	warm map[string]services.Prober
	// facts collapses concurrent inspections of one image (Create of many
	// sandboxes at once without a Check first).
	facts singleflight.Group
	// pgtpl remembers PostgreSQL templates found or built; tplBuilds
	// collapses concurrent finds and builds of one (pgtemplate.go).
	pgtpl     pgTemplates
	tplBuilds singleflight.Group

	// onSecrets, when set (tests only), receives every secret Create
	// generates, so tests can prove none of them leaks.
	onSecrets func(...string)
	// placePod, when set (tests only), changes a sandbox's pod before it
	// is created (the scale test puts pods on kwok's fake nodes), and
	// fakeReady skips the protocol probes, which a fake node's pods never
	// answer.
	placePod  func(*corev1.Pod)
	fakeReady bool
	// templateSalt, when set (tests only), goes into every template key:
	// a test's templates are its own.
	templateSalt string
	// shared remembers the lineages whose shared objects exist (shared.go).
	shared sharedObjects
	// requests counts the HTTP requests sent to the API server, writes
	// (POST, PUT, PATCH, DELETE) those that change something.
	requests, writes atomic.Int64
	// fw are the port-forwards this process keeps (forward.go), and
	// fwRequests numbers their streams.
	fw         forwards
	fwRequests atomic.Int64
}

var _ apply.Provider = (*Provider)(nil)

// New connects to the cluster cfg names (see loadClientConfig) and checks,
// with one GET of the namespace, that it answers and the namespace
// exists. Errors say where the cluster was looked for.
func New(ctx context.Context, cfg *config.Provider, cat *config.Catalog) (*Provider, error) {
	if cfg == nil {
		return nil, errors.New("kubernetes provider: no provider configuration")
	}
	if cat == nil {
		return nil, errors.New("kubernetes provider: no catalog")
	}
	rc, where, ns, err := loadClientConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider: %w", err)
	}
	// The client-side rate limit (config.DefaultKubeQPS explains the
	// defaults); requests beyond the burst wait in the client.
	rc.QPS, rc.Burst = float32(cfg.QPS), int(cfg.Burst)
	if rc.QPS <= 0 {
		rc.QPS, rc.Burst = config.DefaultKubeQPS, config.DefaultKubeBurst
	}
	rc.Burst = max(rc.Burst, int(rc.QPS))
	rc.UserAgent = "sandboxer"
	var p *Provider
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if p != nil {
				p.requests.Add(1)
				if r.Method != http.MethodGet && r.Method != http.MethodHead {
					p.writes.Add(1)
				}
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubeclient.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider: configure client for %s: %w", where, err)
	}
	p = newProvider(cs, rc, ns, where, cfg, cat)
	p.params = cs.Scheme().ParameterCodec
	rctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if err := p.checkNamespace(rctx); err != nil {
		return nil, err
	}
	return p, nil
}

// newProvider assembles a Provider around a clientset (a fake one in unit
// tests, which leave rc nil).
func newProvider(cs kubeclient.Interface, rc *rest.Config, ns, where string, cfg *config.Provider, cat *config.Catalog) *Provider {
	warm := map[string]services.Prober{}
	for _, s := range services.All() {
		warm[s.Name()] = s.Prober()
	}
	return &Provider{cs: cs, rest: rc, ns: ns, where: where, cfg: cfg, cat: cat, warm: warm}
}

// checkNamespace is New's reachability check.
func (p *Provider) checkNamespace(ctx context.Context) error {
	_, err := p.cs.CoreV1().Namespaces().Get(ctx, p.ns, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if isNotFound(err) {
		return fmt.Errorf("kubernetes provider: namespace %q does not exist in the cluster at %s "+
			"(create it with kubectl create namespace %s, or set provider \"kubernetes\" { namespace = \"…\" })", p.ns, p.where, p.ns)
	}
	if isForbiddenErr(err) {
		// A Role may leave out the namespace object itself; what sandboxer
		// must be able to do is work with pods in it.
		_, lerr := p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{Limit: 1})
		if lerr == nil {
			return nil
		}
		return p.apiErr("list", "pods", "", lerr)
	}
	return p.apiErr("get", "namespaces", p.ns, err)
}

// roundTripFunc counts requests (Provider.requests).
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Namespace is the namespace sandboxes go in.
func (p *Provider) Namespace() string { return p.ns }

// Close closes the kept probe connections; the clientset's are pooled by
// net/http and closed with the process.
func (p *Provider) Close() error {
	p.closeForwards()
	for _, w := range p.warm {
		w.Close()
	}
	return nil
}

func (p *Provider) readyTimeout() time.Duration {
	if p.ReadyTimeout > 0 {
		return p.ReadyTimeout
	}
	return DefaultReadyTimeout
}

func (p *Provider) probeTimeout() time.Duration {
	if p.ProbeTimeout > 0 {
		return p.ProbeTimeout
	}
	return DefaultProbeTimeout
}

// podPhaseTerminal reports a pod that will never run again.
func podPhaseTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
