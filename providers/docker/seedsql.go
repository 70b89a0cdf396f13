package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

var _ snapshot.SQLRunner = (*Provider)(nil)

// RunSQL runs seed files with the container's psql as the handed-out
// role over the local socket, one after another, each stopping at its
// first error. Errors name the file as the configuration does.
func (p *Provider) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	id, c, err := serviceOf(rec, "postgres")
	if err != nil {
		return err
	}
	dir := "/tmp/sandboxer-seed-" + randomHex(6)
	local := map[string]string{}
	for i, f := range files {
		local[fmt.Sprintf("%02d.sql", i)] = f.Path
	}
	if err := p.copyIn(ctx, id, dir, local, nil); err != nil {
		return err
	}
	defer func() {
		_ = p.execIn(context.WithoutCancel(ctx), id, "root", []string{"rm", "-rf", dir}, nil)
	}()
	for i, f := range files {
		in := path.Join(dir, fmt.Sprintf("%02d.sql", i))
		err := p.execIn(ctx, id, pgOSUser, []string{"psql", "-X", "-q", "-v", "ON_ERROR_STOP=1",
			"-U", c.User, "-d", c.Database, "-f", in}, nil)
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), in, f.Name)
			return scrubRecord(rec).err(fmt.Errorf("seed file %s: %s", f.Name, msg))
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
