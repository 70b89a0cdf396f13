package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// testNetns is a network namespace on the host with a route to the API
// server and none to the pod range: a host outside the cluster, as a
// laptop or a CI runner sees it. It is made by newTestNetns and removed,
// with its veth pair (and so the host's connected route to it), when
// the test ends, also when it fails: nothing else on the host changes
// (no iptables rule, no sysctl: the API server's address is the host's
// own, so the namespace's packets to it are delivered locally, not
// forwarded).
type testNetns struct {
	name          string
	hostIP, nsIP  string // the veth pair's addresses
	hostIf, nsIf  string
	fd            *os.File // /var/run/netns/<name>, for dialling from inside
	apiHost       string   // the API server's IP
	apiPort       string
	kubeconfigSrc string
}

// requireRootAndCluster skips (fails with SANDBOXER_REQUIRE_KUBE=1) unless
// the test runs as root, with ip(8), and a cluster is there.
func requireRootAndCluster(t *testing.T) string {
	t.Helper()
	kc := testenv.Kubeconfig(t)
	var why string
	if os.Geteuid() != 0 {
		why = "not root: a network namespace needs CAP_NET_ADMIN"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "no ip(8) (iproute2)"
	}
	if why != "" {
		if testenv.KubeRequired() {
			t.Fatalf("%s, and %s=1 requires this test to run", why, testenv.KubeRequireEnv)
		}
		t.Skipf("%s (%s=1 makes this a failure)", why, testenv.KubeRequireEnv)
	}
	return kc
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newTestNetns makes the namespace for the cluster kubeconfig names.
func newTestNetns(t *testing.T, kubeconfig string) *testNetns {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("read %s: %v", kubeconfig, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	apiIP := net.ParseIP(u.Hostname())
	if apiIP == nil || apiIP.To4() == nil || apiIP.IsLoopback() {
		t.Skipf("the API server at %s is not an IPv4 address of this host outside loopback: the namespace test needs one", cfg.Host)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	// 10.250.N.0/30: clear of the local cluster's pod (10.244.0.0/24,
	// kwok's 10.245.0.0/16) and service (10.97.0.0/16) ranges and of
	// Docker's defaults.
	third := int(b[0])
	n := &testNetns{name: "sbxfwd-" + id, hostIf: "sbxh" + id, nsIf: "sbxn" + id,
		hostIP: fmt.Sprintf("10.250.%d.1", third), nsIP: fmt.Sprintf("10.250.%d.2", third),
		apiHost: apiIP.String(), apiPort: u.Port(), kubeconfigSrc: kubeconfig}
	if n.apiPort == "" {
		n.apiPort = "443"
	}
	if out, _ := exec.Command("ip", "route", "show", "10.250."+fmt.Sprint(third)+".0/30").Output(); strings.TrimSpace(string(out)) != "" {
		t.Skipf("10.250.%d.0/30 is routed on this host already", third)
	}
	before := hostNetState(t)
	t.Cleanup(func() {
		if n.fd != nil {
			n.fd.Close()
		}
		// Deleting the namespace destroys its end of the pair, and with it
		// the host's end and the connected route.
		_ = exec.Command("ip", "link", "del", n.hostIf).Run()
		_ = exec.Command("ip", "netns", "del", n.name).Run()
		if after := hostNetState(t); after != before {
			t.Errorf("the host's network state differs after the test:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
	run(t, "ip", "netns", "add", n.name)
	run(t, "ip", "link", "add", n.hostIf, "type", "veth", "peer", "name", n.nsIf)
	run(t, "ip", "link", "set", n.nsIf, "netns", n.name)
	run(t, "ip", "addr", "add", n.hostIP+"/30", "dev", n.hostIf)
	run(t, "ip", "link", "set", n.hostIf, "up")
	in := func(args ...string) { run(t, append([]string{"ip", "netns", "exec", n.name}, args...)...) }
	in("ip", "link", "set", "lo", "up")
	in("ip", "addr", "add", n.nsIP+"/30", "dev", n.nsIf)
	in("ip", "link", "set", n.nsIf, "up")
	in("ip", "route", "add", n.apiHost+"/32", "via", n.hostIP)
	n.fd, err = os.Open(filepath.Join("/var/run/netns", n.name))
	if err != nil {
		t.Fatalf("open the namespace: %v", err)
	}
	return n
}

// hostNetState is what the test must leave as it found: this test's
// namespaces, links and routes (by their names and range), and the
// sysctls a namespace or veth could touch.
func hostNetState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"ip", "netns", "list"}, {"ip", "-o", "link", "show"}, {"ip", "route", "show"}} {
		out, _ := exec.Command(args[0], args[1:]...).Output()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "sbxfwd-") || strings.Contains(line, "sbxh") || strings.Contains(line, "sbxn") || strings.Contains(line, "10.250.") {
				b.WriteString(line + "\n")
			}
		}
	}
	for _, s := range []string{"net/ipv4/ip_forward", "net/ipv4/conf/all/rp_filter", "net/ipv4/conf/default/rp_filter"} {
		v, _ := os.ReadFile(filepath.Join("/proc/sys", s))
		fmt.Fprintf(&b, "%s=%s", s, v)
	}
	return b.String()
}

// dial connects from inside the namespace: the socket is made on an OS
// thread moved into it (and never moved back: the thread ends with the
// goroutine). A dial of a literal IP makes its one socket on the calling
// goroutine's thread.
func (n *testNetns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread is discarded
		if err := unix.Setns(int(n.fd.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{nil, fmt.Errorf("setns: %w", err)}
			return
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// wrapper writes a script that runs the test binary, as the runtime's
// program, inside the namespace.
func (n *testNetns) wrapper(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sandboxer-kubernetes-in-netns")
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s env %s=1 %s\n", n.name, servePluginEnv, self)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// apiRelay is a TCP relay in front of the API server on the host's end of
// the veth pair, which the namespace's kubeconfig names (with the API
// server's own name for TLS): cut closes every connection through it, as
// an API server restart or a middlebox's idle timeout does.
type apiRelay struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
	cuts  int
}

func (n *testNetns) relay(t *testing.T) (*apiRelay, string) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(n.hostIP, "0"))
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	r := &apiRelay{ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); r.cut() })
	upstream := net.JoinHostPort(n.apiHost, n.apiPort)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.pipe(c, upstream)
		}
	}()
	cfg, err := clientcmd.LoadFromFile(n.kubeconfigSrc)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + ln.Addr().String()
		cl.TLSServerName = n.apiHost
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return r, path
}

func (r *apiRelay) pipe(c net.Conn, upstream string) {
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		c.Close()
		return
	}
	r.mu.Lock()
	r.conns[c], r.conns[u] = true, true
	r.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, u)
	r.mu.Unlock()
}

// cut closes every connection through the relay and says how many
// there were.
func (r *apiRelay) cut() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.conns) / 2
	for c := range r.conns {
		c.Close()
	}
	r.cuts++
	return n
}
