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
		// A cut stream dumps again from the start where w can be put
		// back (a file); pg_dump only reads.
		rewind := rewindable(w)
		attempt := 0
		err = p.withPGData(rec, func(d pgsvc.Data) error {
			dump := func() error {
				if attempt++; attempt > 1 {
					if err := rewind(); err != nil {
						return err
					}
				}
				return d.Dump(ctx, w)
			}
			if rewind == nil {
				return transientCut("dump postgres", rec.Resources.Pod, dump())
			}
			return retryCut(ctx, "dump postgres", rec.Resources.Pod, dump)
		})
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
		// Load replaces the database from a template it builds under a
		// scratch name: running it again after a cut stream is safe.
		err = p.withPGData(rec, func(pd pgsvc.Data) error {
			return retryCut(ctx, "load postgres", rec.Resources.Pod, func() error { return pd.Load(ctx, d) })
		})
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
	return redact.ForRecord(rec).Err(p.withPGData(rec, func(pd pgsvc.Data) error {
		return retryCut(ctx, "keep a template of postgres", rec.Resources.Pod, func() error { return pd.Keep(ctx, d) })
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

func redisData(rec *state.Record, op func(state.Credentials) error) error {
	c, ok := rec.Credentials[redissvc.Name]
	if !ok {
		return fmt.Errorf("%s has no redis", rec.Address)
	}
	return op(c)
}
