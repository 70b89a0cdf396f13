package docker

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/services"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/state"
)

// buildReach is how one Create's instance is reached: its TLS material
// (nil without TLS) and the CA file written for clients.
type buildReach struct {
	tls    *instanceTLS
	caFile string
}

// publishAddress is the host IP a request's ports are bound on.
func publishAddress(b *build) string {
	if a := b.req.Publish.Address; a != "" {
		return a
	}
	return loopback
}

// prepareReach fills in, before any container exists, what the handed-out
// credentials say about reaching the instance: the advertised host, the
// in-network endpoint on its user networks (the container's name, which
// the engine's DNS resolves on every user network it joins, and the
// container port) and, with TLS, a fresh CA and server certificate, the
// CA written to a file for clients. A user network the engine lacks fails
// it here, before anything exists: the engine would only notice at start.
func (p *Provider) prepareReach(ctx context.Context, b *build, creds map[string]state.Credentials) error {
	req := b.req
	b.reach = &buildReach{}
	missing, err := p.MissingNetworks(ctx, req.Networks)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("the engine has no user network %s (create it with docker network create, or remove it from networks)",
			strings.Join(quoteAll(missing), ", "))
	}
	pub := req.Publish
	if pub.Address == "" {
		pub = config.DefaultPublish()
	}
	hosts := []string{pub.AdvertiseHost, pub.Address, loopback, "::1", "localhost"}
	for svc, c := range creds {
		c.Host = pub.AdvertiseHost
		name := containerName(req.Lineage, req.Address, req.Generation, svc)
		hosts = append(hosts, name)
		if len(req.Networks) > 0 {
			c.NetworkHost = name
			c.NetworkPort = services.Port(svc)
		}
		creds[svc] = c
	}
	if !pub.TLS {
		return nil
	}
	t, err := newInstanceTLS(req.Address, hosts, time.Now())
	if err != nil {
		return err
	}
	file, err := kit.WriteCAFile(p.CADir, caFileName(req.Lineage, req.Address, req.Generation), t.caPEM)
	if err != nil {
		return err
	}
	b.reach.tls, b.reach.caFile = t, file
	for svc, c := range creds {
		c.CA, c.CAFile = string(t.caPEM), file
		creds[svc] = c
	}
	return nil
}

// cleanup removes the CA file of a Create that failed.
func (r *buildReach) cleanup() error {
	if r == nil || r.caFile == "" {
		return nil
	}
	if err := os.Remove(r.caFile); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove CA file: %w", err)
	}
	return nil
}

// caFileName names an instance's CA file like its containers, without the
// service: one CA serves both.
func caFileName(lineage, address string, generation int) string {
	return instanceName(lineage, address, generation)
}

// attachUserNetworks connects a created, not yet started container to the
// instance's user networks. The container's name is its DNS name there; no
// service alias is added, since every sandbox's postgres would share it.
func (p *Provider) attachUserNetworks(ctx context.Context, b *build, id, name string) error {
	for _, n := range b.req.Networks {
		if err := p.cli.NetworkConnect(ctx, n, id, &network.EndpointSettings{}); err != nil {
			return p.engineErr("attach container "+name+" to user network "+n, err)
		}
	}
	return nil
}

// MissingNetworks returns the names the engine has no network for, so a
// plan can report them where the configuration names them before
// anything is created.
func (p *Provider) MissingNetworks(ctx context.Context, names []string) ([]string, error) {
	var missing []string
	for _, n := range names {
		_, err := p.cli.NetworkInspect(ctx, n, network.InspectOptions{})
		switch {
		case cerrdefs.IsNotFound(err):
			missing = append(missing, n)
		case err != nil:
			return nil, p.engineErr("inspect network "+n, err)
		}
	}
	return missing, nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// removeOrphanCAFile removes the CA file of an orphaned container's
// instance (reap: no record names it any more); none counts as removed.
func (p *Provider) removeOrphanCAFile(m Managed) error {
	if p.CADir == "" || m.Address == "" || m.Lineage == "" || m.Generation < 1 {
		return nil
	}
	// The container's own name gives the instance name it was made with,
	// which an older sandboxer computed differently (8 lineage characters).
	base, ok := strings.CutSuffix(m.Name, "-"+sanitize(m.Service))
	if !ok || m.Service == "" {
		base = caFileName(m.Lineage, m.Address, m.Generation)
	}
	return kit.RemoveCAFile(p.CADir, base)
}
