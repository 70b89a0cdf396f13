package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// TestIsolation: sandboxes of one lineage share a network, yet a container
// of sandbox A cannot open a TCP connection to sandbox B's postgres or redis
// port on it, nor to a sandbox of another lineage; B's published endpoints
// still answer from the host. Controls prove the probe works and each
// target listens on its container address, so a failure means isolation.
func TestIsolation(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	other := newLineage(t, p)
	ctx := context.Background()
	create := func(lineage, addr string, feats config.FeatureSet) *apply.Created {
		t.Helper()
		c, err := p.Create(ctx, apply.CreateRequest{Address: addr, Lineage: lineage, Generation: 1, Features: feats})
		if err != nil {
			t.Fatalf("Create %s: %v", addr, err)
		}
		return c
	}
	a := create(lineage, "sandbox.a", config.FeatureSet{"redis": {}})
	b := create(lineage, "sandbox.b", config.FeatureSet{"postgres": {}, "redis": {}})
	c := create(other, "sandbox.c", config.FeatureSet{"redis": {}})
	if a.Resources.Network != b.Resources.Network {
		t.Errorf("sandboxes of one lineage are on networks %s and %s, want one", a.Resources.Network, b.Resources.Network)
	}
	if a.Resources.Network == c.Resources.Network {
		t.Errorf("sandboxes of two lineages share network %s", a.Resources.Network)
	}
	from := a.Resources.Containers["redis"]

	if code, out := execIn(t, p, from, tcpProbe("127.0.0.1", 6379)); code != 0 {
		t.Fatalf("control: A's container cannot reach its own redis (exit %d): %s", code, out)
	}
	targets := []struct {
		what string
		id   string
		port int
	}{
		{"B's postgres", b.Resources.Containers["postgres"], 5432},
		{"B's redis", b.Resources.Containers["redis"], 6379},
		{"another lineage's redis", c.Resources.Containers["redis"], 6379},
	}
	for _, tt := range targets {
		ip := containerIP(t, p, tt.id)
		// Control: the service answers on that address, from inside its
		// own container, so a failure from A is the network's doing.
		if code, out := execIn(t, p, tt.id, tcpProbe(ip, tt.port)); code != 0 {
			t.Fatalf("control: %s does not answer on %s:%d in its own container (exit %d): %s", tt.what, ip, tt.port, code, out)
		}
		if code, out := execIn(t, p, from, tcpProbe(ip, tt.port)); code == 0 {
			t.Errorf("A's container opened a TCP connection to %s at %s:%d: %s", tt.what, ip, tt.port, out)
		}
	}
	for svc, cr := range b.Credentials {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(cr.Host, strconv.Itoa(cr.Port)), 5*time.Second)
		if err != nil {
			t.Errorf("B's published %s endpoint: %v", svc, err)
			continue
		}
		conn.Close()
	}
	if err := p.Probe(ctx, recordFor(apply.CreateRequest{Address: "sandbox.b", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}, "redis": {}}}, b)); err != nil {
		t.Errorf("Probe B through its published endpoints: %v", err)
	}
}

// tcpProbe is a shell command that exits 0 only if a TCP connection to
// host:port opens within 3 s (a dropped SYN otherwise hangs until then).
func tcpProbe(host string, port int) []string {
	return []string{"timeout", "3", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d && echo connected", host, port)}
}

// execIn runs cmd in a running container and returns its exit code and
// combined output.
func execIn(t *testing.T, p *Provider, id string, cmd []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := p.cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatalf("exec create: %v", err)
	}
	att, err := p.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("exec attach: %v", err)
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		t.Fatalf("exec output: %v", err)
	}
	insp, err := p.cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		t.Fatalf("exec inspect: %v", err)
	}
	return insp.ExitCode, out.String()
}

// containerIP is the container's address on its (only) network.
func containerIP(t *testing.T, p *Provider, id string) string {
	t.Helper()
	ci, err := p.cli.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range ci.NetworkSettings.Networks {
		if ep.IPAddress != "" {
			return ep.IPAddress
		}
	}
	t.Fatalf("container %s has no network address", id)
	return ""
}

// TestLineageNetworkLifecycle: the network appears with the lineage's first
// sandbox, outlives any one of them, and goes with the last; a sandbox
// whose network a concurrent Delete removed between its container's create
// and start still comes up (the start re-ensures the network).
func TestLineageNetworkLifecycle(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := context.Background()
	feats := config.FeatureSet{"redis": {}}
	req := func(addr string) apply.CreateRequest {
		return apply.CreateRequest{Address: addr, Lineage: lineage, Generation: 1, Features: feats}
	}
	networks := func() []string {
		t.Helper()
		ids, err := p.lineageNetworks(ctx, lineage)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}

	// The network is removed, as a racing Delete of the lineage's last
	// sandbox would, after the container was created on it.
	removed := false
	p.afterContainerCreate = func(string) {
		if removed {
			return
		}
		removed = true
		for _, id := range networks() {
			if err := p.cli.NetworkRemove(ctx, id); err != nil {
				t.Errorf("remove network behind Create's back: %v", err)
			}
		}
	}
	one, err := p.Create(ctx, req("sandbox.one"))
	p.afterContainerCreate = nil
	if err != nil {
		t.Fatalf("Create with its network removed before start: %v", err)
	}
	if !removed {
		t.Fatal("the hook never ran; the race was not exercised")
	}
	if got := networks(); len(got) != 1 {
		t.Fatalf("lineage networks after create: %v, want one", got)
	}
	two, err := p.Create(ctx, req("sandbox.two"))
	if err != nil {
		t.Fatalf("Create two: %v", err)
	}
	n, err := p.cli.NetworkInspect(ctx, networks()[0], network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Containers) != 2 {
		t.Errorf("lineage network has %d containers, want 2", len(n.Containers))
	}
	if err := p.Delete(ctx, recordFor(req("sandbox.one"), one)); err != nil {
		t.Fatalf("Delete one: %v", err)
	}
	if got := networks(); len(got) != 1 {
		t.Errorf("lineage networks while two lives: %v, want one", got)
	}
	if err := p.Probe(ctx, recordFor(req("sandbox.two"), two)); err != nil {
		t.Errorf("Probe two after one's delete: %v", err)
	}
	if err := p.Delete(ctx, recordFor(req("sandbox.two"), two)); err != nil {
		t.Fatalf("Delete two: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
}
