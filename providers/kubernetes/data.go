package kubernetes

import (
	"context"
	"fmt"
	"io"

	"github.com/sandboxer/sandboxer/internal/redact"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

var (
	_ snapshot.Engine    = (*Provider)(nil)
	_ snapshot.SQLRunner = (*Provider)(nil)
)

// Data moves with the services' own code (services/postgres: pg_dump and
// pg_restore inside the pod's postgres container over the exec API;
// services/redis: DUMP/RESTORE over the admin connection to the pod's
// IP), as on Docker.

// Dump writes one service's data.
func (p *Provider) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	var err error
	switch service {
	case pgsvc.Name:
		err = p.withPGData(rec, func(d pgsvc.Data) error { return d.Dump(ctx, w) })
	case redissvc.Name:
		err = redisData(rec, func(c state.Credentials) error { return redissvc.Dump(ctx, c, w) })
	default:
		err = fmt.Errorf("service %s is not supported by the kubernetes provider", service)
	}
	return redact.ForRecord(rec).Err(err)
}

// Load replaces one service's data with d.
func (p *Provider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	var err error
	switch service {
	case pgsvc.Name:
		err = p.withPGData(rec, func(pd pgsvc.Data) error { return pd.Load(ctx, d) })
	case redissvc.Name:
		err = redisData(rec, func(c state.Credentials) error { return redissvc.Load(ctx, c, d.Path) })
	default:
		err = fmt.Errorf("service %s is not supported by the kubernetes provider", service)
	}
	return redact.ForRecord(rec).Err(err)
}

// Keep builds PostgreSQL's template for d; Redis loads fast without one.
func (p *Provider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	if service != pgsvc.Name {
		return nil
	}
	return redact.ForRecord(rec).Err(p.withPGData(rec, func(pd pgsvc.Data) error { return pd.Keep(ctx, d) }))
}

// RunSQL runs seed files with the pod's psql as the handed-out role.
func (p *Provider) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	return redact.ForRecord(rec).Err(p.withPGData(rec, func(d pgsvc.Data) error { return d.RunSQL(ctx, files) }))
}

func (p *Provider) withPGData(rec *state.Record, op func(pgsvc.Data) error) error {
	container := rec.Resources.Containers[pgsvc.Name]
	c, ok := rec.Credentials[pgsvc.Name]
	if rec.Resources.Pod == "" || container == "" || !ok {
		return fmt.Errorf("%s has no postgres", rec.Address)
	}
	return op(pgsvc.Data{Run: podRunner{p: p, pod: rec.Resources.Pod, container: container}, Creds: c,
		Features: rec.Features[pgsvc.Name], Allowed: p.cat.Allowed(pgsvc.Name)})
}

func redisData(rec *state.Record, op func(state.Credentials) error) error {
	c, ok := rec.Credentials[redissvc.Name]
	if !ok {
		return fmt.Errorf("%s has no redis", rec.Address)
	}
	return op(c)
}
