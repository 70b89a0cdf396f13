package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/httpstream"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// The port-forward that heals (issue 30): for hosts where pod IPs do not
// route, the process that hands out a sandbox's URLs keeps one local
// listener per service on 127.0.0.1 and carries every accepted
// connection as one stream pair on a port-forward connection to the pod
// through the API server (WebSocket, SPDY where the server refuses it).
// The listener outlives the connection under it: a cut connection is
// dialled again at once and then with a growing pause (100 ms doubling,
// at most 1 s), and a connection accepted meanwhile waits for it
// (forwardDialTimeout) rather than being refused. A watch of the
// address's pods moves the forward to a replacement (the highest
// generation that runs), and the forward ends, its listeners closed,
// when no pod of the address is left.

var _ apply.Forwarder = (*Provider)(nil)

const (
	// forwardDialTimeout bounds how long an accepted connection waits for
	// a port-forward connection to its pod before it is closed.
	forwardDialTimeout = 10 * time.Second
	// forwardBackoffMax caps the pause between dials of a cut connection,
	// so one comes back within a second of the API server answering.
	forwardBackoffMax = time.Second
	// autoDialTimeout bounds endpoint = "auto"'s one TCP connect to a pod
	// IP; a pod on a routed network answers in well under a millisecond.
	autoDialTimeout = 300 * time.Millisecond
)

// forwards are the port-forwards of one provider's process.
type forwards struct {
	mu     sync.Mutex
	byAddr map[string]*forward
	// ports keeps, by address and service, the local port a forward
	// used, so a later forward of the address (the sandbox released and
	// requested again) hands out the same URL where the port is free.
	ports map[string]int
	// auto is endpoint = "auto"'s answer, decided once per process:
	// autoDecided, then autoDirect when the pod IP answered.
	autoDecided, autoDirect bool
	autoOnce                sync.Mutex
}

// forward is one sandbox address's listeners and its connection.
type forward struct {
	p        *Provider
	address  string
	selector string // the pods of the address, a replacement included
	ctx      context.Context
	cancel   context.CancelFunc

	mu      sync.Mutex
	pod     string // the pod new connections go to
	gen     int
	conn    httpstream.Connection // nil: none, or cut
	retired map[string]httpstream.Connection
	lns     map[string]*forwardListener // by service
	ended   bool
	dials   singleflight.Group
}

type forwardListener struct {
	ln     net.Listener
	remote int // the container's port
	port   int // the local one
}

// Forward hands out local ports forwarded to rec's pod when the endpoint
// setting says so (apply.Forwarder): always for "port-forward", for
// "auto" when the pod IP does not answer from this host, never for
// "pod-ip" (nil: hand out the recorded endpoints).
func (p *Provider) Forward(ctx context.Context, rec *state.Record) (map[string]apply.Endpoint, error) {
	if rec == nil || rec.Resources.Pod == "" {
		return nil, errors.New("forward: the record names no pod")
	}
	switch p.endpointMode() {
	case config.EndpointPodIP:
		return nil, nil
	case config.EndpointAuto:
		if p.podIPAnswers(ctx, rec) {
			return nil, nil
		}
	}
	f, err := p.forwardFor(ctx, rec)
	if err != nil {
		return nil, err
	}
	return f.endpoints(), nil
}

func (p *Provider) endpointMode() string {
	if p.cfg == nil || p.cfg.Endpoint == "" {
		return config.DefaultEndpoint
	}
	return p.cfg.Endpoint
}

// podIPAnswers is endpoint = "auto"'s choice: one TCP connect to the
// first service of the first record asked about decides for the whole
// process (pod IPs route from a host for all pods or for none).
func (p *Provider) podIPAnswers(ctx context.Context, rec *state.Record) bool {
	fw := &p.fw
	fw.autoOnce.Lock()
	defer fw.autoOnce.Unlock()
	if fw.autoDecided {
		return fw.autoDirect
	}
	svcs := slices.Sorted(maps.Keys(rec.Credentials))
	if len(svcs) == 0 {
		return false
	}
	c := rec.Credentials[svcs[0]]
	dctx, cancel := context.WithTimeout(ctx, autoDialTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", net.JoinHostPort(c.Host, strconv.Itoa(c.Port)))
	if err == nil {
		conn.Close()
	}
	if ctx.Err() != nil { // the caller gave up: decide another time
		return err == nil
	}
	fw.autoDecided, fw.autoDirect = true, err == nil
	return fw.autoDirect
}

// forwardFor returns the running forward of rec's address, moved to
// rec's pod when that is newer, or starts one.
func (p *Provider) forwardFor(ctx context.Context, rec *state.Record) (*forward, error) {
	fw := &p.fw
	fw.mu.Lock()
	if f := fw.byAddr[rec.Address]; f != nil && !f.isEnded() {
		defer fw.mu.Unlock()
		f.retarget(rec.Resources.Pod, rec.Generation)
		if err := f.listen(rec, fw.ports); err != nil {
			return nil, err
		}
		return f, nil
	}
	fw.mu.Unlock()
	// The pod's own lineage label scopes the watch: another state's
	// sandbox at the same address in the namespace is not followed.
	pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, rec.Resources.Pod, metav1.GetOptions{})
	if isNotFound(err) {
		return nil, fmt.Errorf("forward %s: pod %s: %w", rec.Address, rec.Resources.Pod, apply.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("forward %s: %w", rec.Address, p.apiErr("get", "pods", rec.Resources.Pod, err))
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if f := fw.byAddr[rec.Address]; f != nil && !f.isEnded() { // started meanwhile
		f.retarget(rec.Resources.Pod, rec.Generation)
		if err := f.listen(rec, fw.ports); err != nil {
			return nil, err
		}
		return f, nil
	}
	addrs := []string{labelValue(rec.Address)}
	if ra := labelValue(rec.ResourceAddress()); ra != addrs[0] {
		addrs = append(addrs, ra)
	}
	req, err := labels.NewRequirement(LabelAddress, selection.In, addrs)
	if err != nil {
		return nil, fmt.Errorf("forward %s: %w", rec.Address, err)
	}
	sel := labels.SelectorFromSet(labels.Set{LabelManaged: "true", LabelLineage: pod.Labels[LabelLineage]}).Add(*req)
	fctx, cancel := context.WithCancel(context.Background())
	f := &forward{p: p, address: rec.Address, selector: sel.String(), ctx: fctx, cancel: cancel,
		pod: rec.Resources.Pod, gen: rec.Generation, retired: map[string]httpstream.Connection{}, lns: map[string]*forwardListener{}}
	if fw.ports == nil {
		fw.ports = map[string]int{}
	}
	if err := f.listen(rec, fw.ports); err != nil {
		f.end()
		return nil, err
	}
	if fw.byAddr == nil {
		fw.byAddr = map[string]*forward{}
	}
	fw.byAddr[rec.Address] = f
	go f.follow()
	go func() { _, _ = f.connection(fctx) }() // warm: the first client need not wait for the dial
	return f, nil
}

// closeForwards ends every forward (the provider closes).
func (p *Provider) closeForwards() {
	p.fw.mu.Lock()
	fs := slices.Collect(maps.Values(p.fw.byAddr))
	p.fw.byAddr = nil
	p.fw.mu.Unlock()
	for _, f := range fs {
		f.end()
	}
}

// listen opens a listener for each of rec's services that has none, on
// the port the address had before where it is free.
func (f *forward) listen(rec *state.Record, ports map[string]int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, svc := range slices.Sorted(maps.Keys(rec.Credentials)) {
		remote := rec.Credentials[svc].Port
		if l := f.lns[svc]; l != nil {
			l.remote = remote
			continue
		}
		key := f.address + " " + svc
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[key])))
		if err != nil && ports[key] != 0 { // taken since: any port
			ln, err = net.Listen("tcp", "127.0.0.1:0")
		}
		if err != nil {
			return fmt.Errorf("forward %s %s: listen: %w", f.address, svc, err)
		}
		l := &forwardListener{ln: ln, remote: remote, port: ln.Addr().(*net.TCPAddr).Port}
		ports[key] = l.port
		f.lns[svc] = l
		go f.accept(l)
	}
	return nil
}

func (f *forward) endpoints() map[string]apply.Endpoint {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]apply.Endpoint, len(f.lns))
	for svc, l := range f.lns {
		out[svc] = apply.Endpoint{Host: "127.0.0.1", Port: l.port}
	}
	return out
}

func (f *forward) isEnded() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}

// end closes the listeners and the connections; clients on them see
// their connections close.
func (f *forward) end() {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.ended = true
	conns := slices.Collect(maps.Values(f.retired))
	if f.conn != nil {
		conns = append(conns, f.conn)
	}
	f.conn, f.retired = nil, nil
	lns := slices.Collect(maps.Values(f.lns))
	f.mu.Unlock()
	f.cancel()
	for _, l := range lns {
		l.ln.Close()
	}
	for _, c := range conns {
		c.Close()
	}
	fw := &f.p.fw
	fw.mu.Lock()
	if fw.byAddr[f.address] == f {
		delete(fw.byAddr, f.address)
	}
	fw.mu.Unlock()
}

// retarget moves new connections to pod when its generation is newer
// than the current one's; connections already on the old pod stay on
// it until it goes.
func (f *forward) retarget(pod string, gen int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended || pod == f.pod || gen < f.gen {
		return
	}
	if f.conn != nil {
		f.retired[f.pod] = f.conn
	}
	f.pod, f.gen, f.conn = pod, gen, nil
}

// retire closes the connection to a pod that is gone.
func (f *forward) retire(pod string) {
	f.mu.Lock()
	c := f.retired[pod]
	delete(f.retired, pod)
	f.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (f *forward) accept(l *forwardListener) {
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			if f.isEnded() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		f.mu.Lock()
		remote := l.remote
		f.mu.Unlock()
		go f.handle(conn, remote)
	}
}

// connection returns a live port-forward connection to the current pod,
// dialling one (once for every waiting client) when there is none; a
// failed dial is tried again with a growing pause until
// forwardDialTimeout.
func (f *forward) connection(ctx context.Context) (httpstream.Connection, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardDialTimeout)
	defer cancel()
	pause := 100 * time.Millisecond
	for {
		f.mu.Lock()
		if f.ended {
			f.mu.Unlock()
			return nil, fmt.Errorf("forward %s has ended", f.address)
		}
		if c := f.conn; c != nil && !closed(c.CloseChan()) {
			f.mu.Unlock()
			return c, nil
		}
		pod := f.pod
		f.mu.Unlock()
		v, err, _ := f.dials.Do(pod, func() (any, error) { return f.dialPod(pod) })
		if err == nil {
			return v.(httpstream.Connection), nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("forward %s: port-forward to pod %s: %w", f.address, pod, err)
		case <-time.After(pause):
		}
		pause = min(2*pause, forwardBackoffMax)
	}
}

// dialPod upgrades one connection to pod's port-forward subresource and
// makes it the current one, unless the forward has moved on meanwhile.
func (f *forward) dialPod(pod string) (httpstream.Connection, error) {
	f.mu.Lock()
	if c := f.conn; c != nil && !closed(c.CloseChan()) && f.pod == pod {
		f.mu.Unlock()
		return c, nil
	}
	f.mu.Unlock()
	c, err := f.p.dialPortForward(pod)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.ended || f.pod != pod {
		f.mu.Unlock()
		c.Close()
		return nil, fmt.Errorf("forward %s moved from pod %s", f.address, pod)
	}
	f.conn = c
	f.mu.Unlock()
	go f.heal(c)
	return c, nil
}

// heal waits for c to be cut and dials its successor at once, so the
// next client finds one ready.
func (f *forward) heal(c httpstream.Connection) {
	select {
	case <-c.CloseChan():
	case <-f.ctx.Done():
		return
	}
	c.Close() // its streams end, and the copies of the clients on them
	f.mu.Lock()
	if f.conn == c {
		f.conn = nil
	}
	ended := f.ended
	f.mu.Unlock()
	if !ended {
		_, _ = f.connection(f.ctx)
	}
}

func closed(ch <-chan bool) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
