package docker

import (
	"context"
	"fmt"
	"io"

	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

var _ snapshot.Engine = (*Provider)(nil)

// Dump writes one service's data (see pgdata.go, redisdata.go).
func (p *Provider) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	var err error
	switch service {
	case "postgres":
		err = p.pgDump(ctx, rec, w)
	case "redis":
		err = p.redisDump(ctx, rec, w)
	default:
		err = fmt.Errorf("service %s is not supported by the docker provider", service)
	}
	return scrubRecord(rec).err(err)
}

// Load replaces one service's data with d.
func (p *Provider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	var err error
	switch service {
	case "postgres":
		err = p.pgLoad(ctx, rec, d)
	case "redis":
		err = p.redisLoad(ctx, rec, d.Path)
	default:
		err = fmt.Errorf("service %s is not supported by the docker provider", service)
	}
	return scrubRecord(rec).err(err)
}

// Keep builds PostgreSQL's template for d; Redis loads fast without one.
func (p *Provider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	if service != "postgres" {
		return nil
	}
	return scrubRecord(rec).err(p.pgKeep(ctx, rec, d))
}

// scrubRecord is a scrubber for every secret of rec: engine errors can
// echo what they were given.
func scrubRecord(rec *state.Record) *scrubber {
	var s scrubber
	for _, c := range rec.Credentials {
		s.add(c.Password, c.AdminPassword)
	}
	return &s
}
