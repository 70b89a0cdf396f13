package kubernetes

import (
	"context"
	"fmt"
	"io"

	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/services"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

var (
	_ snapshot.Engine    = (*Provider)(nil)
	_ snapshot.SQLRunner = (*Provider)(nil)
)

// Data moves with the services' own movers (services.Service's Data;
// services/postgres: pg_dump and pg_restore inside the pod's postgres
// container over the exec API; services/redis: DUMP/RESTORE over the
// admin connection to the pod's IP), as on Docker.

// Dump writes one service's data. A cut stream dumps again from the
// start where w can be put back (a file).
func (p *Provider) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	rewind := rewindable(w)
	attempt := 0
	what := "dump " + service
	return redact.ForRecord(rec).Err(p.withData(rec, service, func(d services.DataMover) error {
		dump := func() error {
			if attempt++; attempt > 1 {
				if err := rewind(); err != nil {
					return err
				}
			}
			return d.Dump(ctx, w)
		}
		if rewind == nil {
			return transientCut(what, rec.Resources.Pod, dump())
		}
		return retryCut(ctx, what, rec.Resources.Pod, dump)
	}))
}

// Load replaces one service's data with d; a load is safe to run again
// after a cut stream (services.DataMover).
func (p *Provider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	return redact.ForRecord(rec).Err(p.withData(rec, service, func(m services.DataMover) error {
		return retryCut(ctx, "load "+service, rec.Resources.Pod, func() error { return m.Load(ctx, d) })
	}))
}

// Keep prepares d where the service keeps a copy (PostgreSQL's template).
func (p *Provider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	return redact.ForRecord(rec).Err(p.withData(rec, service, func(m services.DataMover) error {
		return retryCut(ctx, "keep a template of "+service, rec.Resources.Pod, func() error { return m.Keep(ctx, d) })
	}))
}

// RunSQL runs seed files with the pod's psql as the handed-out role.
func (p *Provider) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	// A seed file's SQL may not be safe to run twice, so a cut stream is
	// not retried: it is transient, and the create that seeds rolls back.
	return redact.ForRecord(rec).Err(p.withPGData(rec, func(d pgsvc.Data) error {
		return transientCut("run the seed files", rec.Resources.Pod, d.RunSQL(ctx, files))
	}))
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

// withData runs op with the data mover of one service of rec, run
// through its container in the pod.
func (p *Provider) withData(rec *state.Record, service string, op func(services.DataMover) error) error {
	s, ok := services.Lookup(service)
	if !ok {
		return fmt.Errorf("service %s is not supported by the kubernetes provider", service)
	}
	container := rec.Resources.Containers[service]
	c, ok := rec.Credentials[service]
	if rec.Resources.Pod == "" || container == "" || !ok {
		return fmt.Errorf("%s has no %s", rec.Address, service)
	}
	return op(s.Data(services.Instance{Run: podRunner{p: p, pod: rec.Resources.Pod, container: container}, Creds: c,
		Features: rec.Features[service], Allowed: p.cat.Allowed(service)}))
}
