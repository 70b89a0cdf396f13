package docker

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
)

// fileCapabilities lists the allowed features an image of a service
// whose features its files tell (services.FileInspector: PostgreSQL's
// extension control files, MySQL's plugin libraries) ships, with their
// versions where the files say them. The files are read from a created,
// never started container: no server start (initdb or
// mariadb-install-db alone take seconds) and nothing of the image runs.
// The same container tells the service user (serviceuser.go).
func (p *Provider) fileCapabilities(ctx context.Context, s services.Service, fi services.FileInspector, ref string, ii image.InspectResponse) (imageFacts, error) {
	svc := s.Name()
	id, remove, err := p.createInspection(ctx, inspectSpec{Image: ref})
	if err != nil {
		return imageFacts{}, err
	}
	defer remove()
	owner, err := p.readOwner(ctx, id, svc, ii)
	if err != nil {
		return imageFacts{}, err
	}
	allowed := p.cat.Allowed(svc)
	versions, err := fi.ImageFeatures(ctx, imageFiles{p: p, id: id}, imageEnvOf(ii), allowed)
	if err != nil {
		return imageFacts{}, fmt.Errorf("image %s: %w", ref, err)
	}
	ic := plan.ImageCapabilities{Features: map[string]string{}, Hint: fi.FeaturesHint("docker")}
	for _, f := range allowed {
		if v, ok := versions[f]; ok {
			ic.Features[f] = v
		}
	}
	return imageFacts{ImageCapabilities: ic, Owner: owner}, nil
}

// imageFiles reads an image's files from a created, never started
// container of it (services.ImageFiles).
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
