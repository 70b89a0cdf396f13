package kubernetes

import (
	"context"

	"github.com/sandboxer/sandboxer/apply"
)

// Ping checks that the cluster's API server answers now, with the check
// New makes (one read of the namespace, or of its pods when a Role leaves
// the namespace object out): apply.Pinger, serve's readiness.
func (p *Provider) Ping(ctx context.Context) error { return p.checkNamespace(ctx) }

var _ apply.Pinger = (*Provider)(nil)
