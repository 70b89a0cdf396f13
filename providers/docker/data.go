package docker

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

var _ snapshot.Engine = (*Provider)(nil)

// Data moves with each service's own mover (services.Service's Data),
// given exec and copy into the service's container.

// Dump writes one service's data.
func (p *Provider) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	return redact.ForRecord(rec).Err(p.withData(rec, service, func(d services.DataMover) error { return d.Dump(ctx, w) }))
}

// Load replaces one service's data with d.
func (p *Provider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	return redact.ForRecord(rec).Err(p.withData(rec, service, func(m services.DataMover) error { return m.Load(ctx, d) }))
}

// Keep prepares d where the service keeps a copy (PostgreSQL's template).
func (p *Provider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	return redact.ForRecord(rec).Err(p.withData(rec, service, func(m services.DataMover) error { return m.Keep(ctx, d) }))
}

// withData runs op with the data mover of one service of rec, run through
// its container.
func (p *Provider) withData(rec *state.Record, service string, op func(services.DataMover) error) error {
	s, ok := services.Lookup(service)
	if !ok {
		return fmt.Errorf("service %s is not supported by the docker provider", service)
	}
	id, c, err := serviceOf(rec, service)
	if err != nil {
		return err
	}
	return op(s.Data(services.Instance{Run: containerRunner{p: p, id: id}, Creds: c,
		Features: rec.Features[service], Allowed: p.cat.Allowed(service)}))
}

// pgData is the PostgreSQL data mover of rec, run through its container
// (seed SQL: seedsql.go).
func (p *Provider) pgData(rec *state.Record) (pgsvc.Data, error) {
	id, c, err := serviceOf(rec, pgsvc.Name)
	if err != nil {
		return pgsvc.Data{}, err
	}
	return pgsvc.Data{Run: containerRunner{p: p, id: id}, Creds: c,
		Features: rec.Features[pgsvc.Name], Allowed: p.cat.Allowed(pgsvc.Name)}, nil
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

// ExecStdin is contract.StdinRunner's exec with input.
func (r containerRunner) ExecStdin(ctx context.Context, user string, cmd []string, stdin io.Reader, stdout io.Writer) error {
	return r.p.execStdin(ctx, r.id, user, cmd, stdin, stdout)
}
