package docker

import (
	"context"

	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

var _ snapshot.SQLRunner = (*Provider)(nil)

// RunSQL runs seed files with the container's psql as the handed-out
// role (services/postgres), errors naming each file as the configuration
// does.
func (p *Provider) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	d, err := p.pgData(rec)
	if err != nil {
		return err
	}
	return redact.ForRecord(rec).Err(d.RunSQL(ctx, files))
}
