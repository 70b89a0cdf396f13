package docker

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"github.com/sandboxer/sandboxer/plan"
)

// postgresCapabilities lists the allowed extensions a postgres image
// ships, with their default versions, from the extension control files
// (SHAREDIR/extension/NAME.control, which is what pg_available_extensions
// reads too). The files are read from a created, never started container:
// no server start (initdb alone takes seconds) and nothing of the image
// runs. The same container tells the service user (serviceuser.go).
func (p *Provider) postgresCapabilities(ctx context.Context, ref string, ii image.InspectResponse) (imageFacts, error) {
	id, remove, err := p.createInspection(ctx, inspectSpec{Image: ref})
	if err != nil {
		return imageFacts{}, err
	}
	defer remove()
	owner, err := p.readOwner(ctx, id, "postgres", ii)
	if err != nil {
		return imageFacts{}, err
	}
	allowed := p.cat.Allowed("postgres")
	versions, err := pgsvc.Extensions(ctx, imageFiles{p: p, id: id}, imageEnv(ii, "PG_MAJOR"),
		func(name string) bool { return slices.Contains(allowed, name) })
	if err != nil {
		return imageFacts{}, fmt.Errorf("image %s: %w", ref, err)
	}
	ic := plan.ImageCapabilities{Features: map[string]string{},
		Hint: `use a postgres image that ships it: provider "docker" { image "postgres" { ref = "…" } }`}
	for _, f := range p.cat.Allowed("postgres") {
		if v, ok := versions[f]; ok {
			ic.Features[f] = v
		}
	}
	return imageFacts{ImageCapabilities: ic, Owner: owner}, nil
}

// imageFiles reads an image's files from a created, never started
// container of it (services/postgres.ImageFiles).
type imageFiles struct {
	p  *Provider
	id string
}

func (f imageFiles) Read(ctx context.Context, path string) (io.ReadCloser, error) {
	rc, _, err := f.p.cli.CopyFromContainer(ctx, f.id, path)
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, f.p.engineErr("read "+path, err)
	}
	return rc, nil
}
