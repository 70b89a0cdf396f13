package kubernetes

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// cutProxy stands in front of the API server as a TLS-terminating reverse
// proxy (it forwards with the admin's credentials) and cuts exec streams
// mid-way: the first `cuts` exec streams that carry more than limit bytes
// in either direction are closed at that point, as an overloaded API
// server, node or middlebox does. Everything else passes untouched.
type cutProxy struct {
	// stall: a stream over the limit stops moving (no byte either way)
	// until the client closes it, instead of being closed.
	stall     bool
	limit     int64
	remaining atomic.Int64
	done      atomic.Int64 // streams cut so far
	srv       *httptest.Server
}

func newCutProxy(t *testing.T, cuts int, limit int64) (*cutProxy, string) {
	return newProxy(t, cuts, limit, false)
}

// newStallProxy is a cutProxy whose cut streams stall instead.
func newStallProxy(t *testing.T, cuts int, limit int64) (*cutProxy, string) {
	return newProxy(t, cuts, limit, true)
}

func newProxy(t *testing.T, cuts int, limit int64, stall bool) (*cutProxy, string) {
	t.Helper()
	kc := testenv.Kubeconfig(t)
	upstream, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatalf("read %s: %v", kc, err)
	}
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatalf("transport: %v", err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	cp := &cutProxy{limit: limit, stall: stall}
	cp.remaining.Store(int64(cuts))
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: rt,
		ModifyResponse: func(res *http.Response) error {
			if res.StatusCode == http.StatusSwitchingProtocols && strings.HasSuffix(res.Request.URL.Path, "/exec") {
				if rwc, ok := res.Body.(io.ReadWriteCloser); ok {
					res.Body = &cutConn{rwc: rwc, p: cp, closed: make(chan struct{})}
				}
			}
			return nil
		},
		ErrorLog: nil,
	}
	cp.srv = httptest.NewUnstartedServer(rp)
	cp.srv.EnableHTTP2 = false
	cp.srv.StartTLS()
	t.Cleanup(cp.srv.Close)

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cp.srv.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: cp.srv.URL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return cp, path
}

// cutConn is one exec stream's connection to the API server.
type cutConn struct {
	rwc  io.ReadWriteCloser
	p    *cutProxy
	mu   sync.Mutex
	n    int64
	cut  bool
	pass bool // over the limit when no cuts were left: never cut

	closed    chan struct{}
	closeOnce sync.Once
}

// over counts n more bytes and reports whether the stream is cut now.
func (c *cutConn) over(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return true
	}
	if c.pass {
		return false
	}
	c.n += int64(n)
	if c.n <= c.p.limit {
		return false
	}
	if c.p.remaining.Add(-1) < 0 {
		c.pass = true
		return false
	}
	c.cut = true
	c.p.done.Add(1)
	if !c.p.stall {
		c.rwc.Close()
	}
	return true
}

// halt is what a cut stream does: ends at once or, stalled, once the
// client has closed it.
func (c *cutConn) halt() {
	if c.p.stall {
		<-c.closed
	}
}

func (c *cutConn) Read(b []byte) (int, error) {
	n, err := c.rwc.Read(b)
	if c.over(n) {
		c.halt()
		return 0, io.ErrUnexpectedEOF
	}
	return n, err
}

func (c *cutConn) Write(b []byte) (int, error) {
	if c.over(len(b)) {
		c.halt()
		return 0, io.ErrClosedPipe
	}
	return c.rwc.Write(b)
}

func (c *cutConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.rwc.Close()
}

// providerThrough connects a provider to the cluster through kubeconfig
// (the proxy's), with an empty capability cache, so its first create
// inspects the images over exec streams.
func providerThrough(t *testing.T, kubeconfig string) *Provider {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(kubeconfig), config.DefaultCatalog())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	p.SetCacheDir(t.TempDir())
	p.CADir = t.TempDir()
	return p
}

// The exec streams that read an image's files are cut twice under a
// create: the create reads again and succeeds, with what the image
// provides found whole.
func TestExecStreamCutIsReadAgain(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	cp, kc := newCutProxy(t, 2, 16<<10)
	p := providerThrough(t, kc)
	lineage := newLineage(t, p)
	feats := config.FeatureSet{"postgres": {"vector"}, "redis": {}}
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.cut", Lineage: lineage, Generation: 1, Features: feats})
	if got := cp.done.Load(); got != 2 {
		t.Fatalf("the proxy cut %d exec streams, want 2 (the test proves nothing otherwise)", got)
	}
	if _, ok := rec.AvailableExtensions["postgres"]; !ok || !containsStr(rec.AvailableExtensions["postgres"], "vector") {
		t.Errorf("available extensions after the cut reads: %v, want vector among postgres's", rec.AvailableExtensions)
	}
	ctx := ctxFor(t, time.Minute)
	if err := p.Probe(ctx, rec); err != nil {
		t.Errorf("Probe: %v", err)
	}
}

// Every exec stream cut: the create fails as transient, says what was
// cut and what to do, and leaves nothing behind.
func TestExecStreamCutEveryTimeFailsTransient(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	_, kc := newCutProxy(t, 1000, 16<<10)
	p := providerThrough(t, kc)
	lineage := newLineage(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := p.Create(ctx, apply.CreateRequest{Address: "sandbox.cutall", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}}})
	if err == nil {
		t.Fatal("Create succeeded with every exec stream cut")
	}
	if !errors.Is(err, apply.ErrTransient) {
		t.Errorf("error %v does not wrap apply.ErrTransient", err)
	}
	for _, want := range []string{"cut 4 times", "try again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	assertNothingLabelled(t, p, lineage)
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
