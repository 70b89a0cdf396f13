package docker

import (
	"context"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
)

// createNetwork makes the instance's own bridge network. Its default host
// binding address is 127.0.0.1, so even a port published without an explicit
// address would stay on loopback.
func (p *Provider) createNetwork(ctx context.Context, name string, labels map[string]string) (string, error) {
	// Not cancelled mid-flight, for the reason given in createContainer.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	resp, err := p.cli.NetworkCreate(cctx, name, network.CreateOptions{
		Driver: "bridge",
		Labels: labels,
		Options: map[string]string{
			"com.docker.network.bridge.host_binding_ipv4": loopback,
		},
	})
	if err != nil {
		if strings.Contains(err.Error(), "non-overlapping IPv4 address pool") {
			return "", fmt.Errorf("create network %s: the engine has no free address pool for another network "+
				"(each sandbox gets its own; remove unused networks or widen default-address-pools in daemon.json): %w", name, err)
		}
		return "", p.engineErr("create network "+name, err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return resp.ID, nil
}

// defaultNetwork is the engine's default bridge. Containers are created on
// it only so that their creation and file copy need not wait for the
// instance network; they are moved to the instance network before they
// start, so they never run on it (see attachNetwork).
const defaultNetwork = "bridge"

// instanceNet is the instance network while it is being created, in
// parallel with the first container (creating a bridge network takes the
// engine about 80 ms, less than creating a container and copying its files).
type instanceNet struct {
	name string
	done chan struct{} // closed once id or err is set
	id   string
	err  error
}

func newInstanceNet(name string) *instanceNet {
	return &instanceNet{name: name, done: make(chan struct{})}
}

// create makes the network and publishes the outcome to waiters.
func (n *instanceNet) create(ctx context.Context, p *Provider, labels map[string]string) error {
	n.id, n.err = p.createNetwork(ctx, n.name, labels)
	close(n.done)
	return n.err
}

// wait returns the network's id once it exists.
func (n *instanceNet) wait(ctx context.Context) (string, error) {
	select {
	case <-n.done:
		return n.id, n.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// attachNetwork moves a created, not yet started container from the
// default bridge to the instance network, under the service's name as its
// alias. Only then may it start: on the shared default bridge it could
// reach other sandboxes.
func (p *Provider) attachNetwork(ctx context.Context, b *build, service, id, name string) error {
	netID, err := b.net.wait(ctx)
	if err != nil {
		return err
	}
	if err := p.cli.NetworkDisconnect(ctx, defaultNetwork, id, false); err != nil {
		return p.engineErr("detach container "+name+" from the default network", err)
	}
	if err := p.cli.NetworkConnect(ctx, netID, id, &network.EndpointSettings{Aliases: []string{service}}); err != nil {
		return p.engineErr("attach container "+name+" to network "+b.net.name, err)
	}
	return nil
}

// removeNetwork removes a network; one already gone counts as removed.
func (p *Provider) removeNetwork(ctx context.Context, id string) error {
	err := p.cli.NetworkRemove(ctx, id)
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	return p.engineErr("remove network", err)
}
