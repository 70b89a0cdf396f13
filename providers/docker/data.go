package docker

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

var _ snapshot.Engine = (*Provider)(nil)

// Dump writes one service's data (see pgdata.go, redisdata.go).
func (p *Provider) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	var err error
	switch service {
	case "postgres":
		err = p.withPGData(rec, func(d pgsvc.Data) error { return d.Dump(ctx, w) })
	case "redis":
		err = redisData(rec, func(c state.Credentials) error { return redissvc.Dump(ctx, c, w) })
	default:
		err = fmt.Errorf("service %s is not supported by the docker provider", service)
	}
	return redact.ForRecord(rec).Err(err)
}

// Load replaces one service's data with d.
func (p *Provider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	var err error
	switch service {
	case "postgres":
		err = p.withPGData(rec, func(pd pgsvc.Data) error { return pd.Load(ctx, d) })
	case "redis":
		err = redisData(rec, func(c state.Credentials) error { return redissvc.Load(ctx, c, d.Path) })
	default:
		err = fmt.Errorf("service %s is not supported by the docker provider", service)
	}
	return redact.ForRecord(rec).Err(err)
}

// Keep builds PostgreSQL's template for d; Redis loads fast without one.
func (p *Provider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	if service != "postgres" {
		return nil
	}
	return redact.ForRecord(rec).Err(p.withPGData(rec, func(pd pgsvc.Data) error { return pd.Keep(ctx, d) }))
}

// pgData is the PostgreSQL data mover of rec, run through its container.
func (p *Provider) pgData(rec *state.Record) (pgsvc.Data, error) {
	id, c, err := serviceOf(rec, "postgres")
	if err != nil {
		return pgsvc.Data{}, err
	}
	return pgsvc.Data{Run: containerRunner{p: p, id: id}, Creds: c,
		Features: rec.Features["postgres"], Allowed: p.cat.Allowed("postgres")}, nil
}

func (p *Provider) withPGData(rec *state.Record, op func(pgsvc.Data) error) error {
	d, err := p.pgData(rec)
	if err != nil {
		return err
	}
	return op(d)
}

// containerRunner is a service's Runner over one container: docker exec
// and docker cp.
type containerRunner struct {
	p  *Provider
	id string
}

func (r containerRunner) Exec(ctx context.Context, user string, cmd []string, stdout io.Writer) error {
	return r.p.execIn(ctx, r.id, user, cmd, stdout)
}

func (r containerRunner) CopyIn(ctx context.Context, dir string, files map[string]string, inline map[string][]byte) error {
	return r.p.copyIn(ctx, r.id, dir, files, inline)
}

// redisData runs op with the record's redis credentials: Redis data moves
// over the admin connection (services/redis), no exec needed.
func redisData(rec *state.Record, op func(state.Credentials) error) error {
	c, ok := rec.Credentials["redis"]
	if !ok {
		return fmt.Errorf("%s has no redis", rec.Address)
	}
	return op(c)
}
