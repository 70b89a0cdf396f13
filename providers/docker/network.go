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

// removeNetwork removes a network; one already gone counts as removed.
func (p *Provider) removeNetwork(ctx context.Context, id string) error {
	err := p.cli.NetworkRemove(ctx, id)
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	return p.engineErr("remove network", err)
}
