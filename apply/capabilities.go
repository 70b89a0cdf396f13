package apply

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// Capabilities a provider may have beyond Provider. Each is a small named
// interface; callers find one with As, which sees through wrappers (the
// library's connect-on-first-use provider), and providertest checks every
// one a provider has. The data capabilities (snapshot.Engine,
// snapshot.SQLRunner) are defined in package snapshot, where their types
// live, and are found the same way. A provider that holds a connection
// also implements io.Closer.

// Resource is one labelled engine resource: a container, network or volume
// (or their counterparts on another runtime).
type Resource struct {
	Kind       string // one of the Kind constants
	ID         string // the engine's id; a volume's name
	Name       string
	Address    string
	Lineage    string
	Generation int    // -1 when the label is missing or malformed
	Service    string // containers only
	// Runtime is set by a provider that drives several runtimes, to
	// route DeleteManaged; a single runtime's provider leaves it empty.
	Runtime string
}

// Kinds of resources, in the order they must be removed. On Kubernetes
// a pod is listed as one KindContainer per container, and its Secret,
// Service and NetworkPolicy under kinds of their own.
const (
	KindContainer     = "container"
	KindNetwork       = "network"
	KindVolume        = "volume"
	KindSecret        = "secret"
	KindService       = "service"
	KindNetworkPolicy = "networkpolicy"
)

// Inventory lists and removes resources by their labels, the source of
// truth after a crash: the orphan sweep of reap and the janitor use it.
type Inventory interface {
	// ListManaged returns every resource labelled with lineage ("" lists
	// every lineage's).
	ListManaged(ctx context.Context, lineage string) ([]Resource, error)
	// DeleteManaged removes resources ListManaged returned; ones already
	// gone count as removed.
	DeleteManaged(ctx context.Context, items []Resource) error
}

// SharedSweeper removes what the instances of a lineage share on a
// runtime (the Kubernetes runtime: the lineage's headless Service and
// NetworkPolicy) once none of them is left there, and nothing while one
// is. A run of apply or destroy that removed an instance calls it once at
// its end, so an instance's own Delete need not ask whether it was the
// last (the orphan sweep of reap and the janitor catches the rest).
type SharedSweeper interface {
	SweepShared(ctx context.Context, lineage string) error
}

// NetworkChecker tells which user networks (the networks a configuration
// names for its sandboxes to join) the engine lacks, so plan can refuse
// them before anything is created.
type NetworkChecker interface {
	MissingNetworks(ctx context.Context, names []string) ([]string, error)
}

// Wrapper is a provider that forwards to another; As looks through it.
type Wrapper interface {
	Unwrap() Provider
}

// As returns p, or the provider p wraps, as a T when it has that
// capability.
func As[T any](p Provider) (T, bool) {
	for p != nil {
		if c, ok := p.(T); ok {
			return c, true
		}
		w, ok := p.(Wrapper)
		if !ok {
			break
		}
		p = w.Unwrap()
	}
	var zero T
	return zero, false
}

// TemplateCollector removes the template data directories (kept per
// image and settings to start sandboxes from, see providers/docker
// pgtemplate.go) that no configuration in reach refers to: keep are the
// image refs the configuration may run. A template in use by a sandbox
// is never removed. It returns what it removed.
type TemplateCollector interface {
	CollectTemplates(ctx context.Context, keep []string) ([]Resource, error)
}

// Pinger answers whether the runtime is reachable now, cheaply (the
// Docker engine's ping, a read of the Kubernetes namespace): a replica's
// readiness check asks it every few seconds. A provider without it counts
// as reachable once connected.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Forker copies a running instance's data into new instances
// (sandboxer fork): every request's instance starts from the source's
// data as it stood at one instant, with its own credentials. The
// source keeps serving; its writers are held only while its data is
// captured. On error nothing of the new instances is left (what an
// interrupted fork leaves carries the labels reap finds).
type Forker interface {
	Fork(ctx context.Context, src *state.Record, reqs []CreateRequest) (*Forked, error)
}

// Forked is what a fork made: one Created per request, in order, and
// how the data was captured.
type Forked struct {
	Created []*Created
	// Methods is how each service's data was captured (e.g. "reflink",
	// "memory", "copy", "rdb"), service → method, and, after a "+", how
	// the copies got it where the runtime says ("overlay", "volume",
	// "stream").
	Methods map[string]string
	// Bytes is the size of the captured data, all services together.
	Bytes int64
	// Held is how long the source's writers were held.
	Held time.Duration
}

// ErrNoRoom is wrapped by a Forker's refusal, before anything started,
// when the engine's host lacks the disk or memory the copies need.
var ErrNoRoom = errors.New("not enough room on the engine's host")

// ErrNotForkable is wrapped by a Forker's refusal, before anything
// started, when one of the instance's services has no way to be forked
// (it implements no services.Forker).
var ErrNotForkable = errors.New("cannot be forked")

// Forwarder reaches an instance's services from this host through its
// runtime when the instance's own addresses do not route here (the
// Kubernetes runtime's port-forward over the API server, whose endpoint
// setting decides). Forward returns, per service, the local address to
// hand out in place of the recorded host and port, or nil when the
// recorded ones are what to hand out (no forward is needed). A forward
// runs in the provider's process until the instance ends (it follows a
// replacement at the same address) or the provider closes; asking again
// for a forwarded address returns the same ports.
type Forwarder interface {
	Forward(ctx context.Context, rec *state.Record) (map[string]Endpoint, error)
}

// Endpoint is a host and port a client connects to.
type Endpoint struct {
	Host string
	Port int
}
