package docker

import (
	"context"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"
)

// ensureImage returns the local image ref names, pulling it first when it
// is missing (Check only; Create never pulls).
func (p *Provider) ensureImage(ctx context.Context, service, ref string) (image.InspectResponse, error) {
	ii, err := p.cli.ImageInspect(ctx, ref)
	if err == nil {
		return ii, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return ii, p.engineErr(fmt.Sprintf("inspect image %q for service %s", ref, service), err)
	}
	if perr := p.pull(ctx, ref); perr != nil {
		return ii, fmt.Errorf("image %q for service %s is not available locally and could not be pulled: %w; "+
			"build it or set provider \"docker\" { image %q { ref = \"…\" } }", ref, service, perr, service)
	}
	return p.inspectImage(ctx, service, ref)
}

// pull fetches ref; errors can arrive in the progress stream, after the
// request itself succeeded, so the stream is read to the end.
func (p *Provider) pull(ctx context.Context, ref string) error {
	rc, err := p.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	out := p.PullProgress
	if out == nil {
		out = io.Discard
	} else {
		fmt.Fprintf(out, "Pulling %s...\n", ref)
	}
	return jsonmessage.DisplayJSONMessagesStream(rc, out, 0, false, nil)
}

// inspectImage returns the local image for a service, with an error in the
// same words as Check when it is missing (Create never pulls).
func (p *Provider) inspectImage(ctx context.Context, service, ref string) (image.InspectResponse, error) {
	ii, err := p.cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return ii, fmt.Errorf("image %q for service %s is not available locally; "+
			"run `sandboxer plan` to check images, build it, or set provider \"docker\" { image %q { ref = \"…\" } }",
			ref, service, service)
	}
	if err != nil {
		return ii, p.engineErr(fmt.Sprintf("inspect image %q", ref), err)
	}
	return ii, nil
}

// imageEnv returns the value of an environment variable baked into an image.
func imageEnv(ii image.InspectResponse, key string) string {
	if ii.Config == nil {
		return ""
	}
	for _, kv := range ii.Config.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// imageEnvOf looks variables up in the image's environment, for the
// service packages, which know nothing of Docker's types.
func imageEnvOf(ii image.InspectResponse) func(string) string {
	return func(name string) string { return imageEnv(ii, name) }
}

// tmpfsMounts puts a tmpfs on every path the image declares as a VOLUME,
// plus extra: a mount at a VOLUME path stops the engine from creating an
// anonymous volume there, which would outlive a `docker rm` without -v and
// slow every start. Sandboxes are disposable, so nothing needs to persist.
func tmpfsMounts(ii image.InspectResponse, extra ...string) map[string]string {
	m := map[string]string{}
	if ii.Config != nil {
		for path := range ii.Config.Volumes {
			m[path] = ""
		}
	}
	for _, path := range extra {
		m[path] = ""
	}
	return m
}
