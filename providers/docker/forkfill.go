package docker

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
)

// How a copy's data is filled from the capture's stage (fork.go),
// reported after the capture's method in apply.Forked.Methods
// ("copy+overlay", "copy+volume", "memory+stream", "rdb+overlay"):
//
//   - fillOverlay (forkoverlay.go): with volume storage on an engine
//     that mounts overlayfs volumes, the stage copied once into a base
//     the copies share under an overlay each; nothing per copy.
//   - fillVolume: the stage lies on the source's data volume and the
//     copy's data directory on its own volume, so a short-lived
//     container of the same image mounts both (the source's read-only)
//     and copies the files with cp inside the engine's host: no byte
//     goes through this process or the engine's API.
//   - fillStream: otherwise (a tmpfs, which no other container sees)
//     a tar stream out of an exec in the source, into an exec in the
//     copy (PostgreSQL's) or the copy's created container (a captured
//     file), through this process.
const (
	fillVolume = "volume"
	fillStream = "stream"
)

// Where the fill container mounts the two volumes.
const (
	fillSrcMount = "/sbx-fork-src"
	fillDstMount = "/sbx-fork-dst"
)

// LabelForkFill marks a fork's fill container (forkfill.go); it carries
// the copy's instance labels too, so a killed fork's is removed with
// the copy by the sweep and by reap.
const LabelForkFill = "dev.sandboxer.fork-fill"

// volumeAt is the named volume mounted at or above p in a container's
// mounts, and p's path inside it ("" when p is the mount point).
func volumeAt(mounts []container.MountPoint, p string) (name, rel string, ok bool) {
	best := -1
	for i, m := range mounts {
		if m.Type != mount.TypeVolume || m.Name == "" || !below(p, m.Destination) {
			continue
		}
		if best < 0 || len(m.Destination) > len(mounts[best].Destination) {
			best = i
		}
	}
	if best < 0 {
		return "", "", false
	}
	rel = strings.TrimPrefix(path.Clean(p), path.Clean(mounts[best].Destination))
	return mounts[best].Name, strings.TrimPrefix(rel, "/"), true
}

// fillPostgres fills the copy's (started, waiting) data directory
// pgdata in container id from the stage, by the cheapest path the
// storage allows, bounded by from.fills, and returns the path taken.
func (p *Provider) fillPostgres(ctx context.Context, b *build, from *forkFrom, id, image, pgdata string, owner fileOwner) (string, error) {
	select {
	case from.fills <- struct{}{}:
		defer func() { <-from.fills }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	stage := from.copies["postgres"].Path
	if sv := from.srcVolumes["postgres"]; sv != "" {
		ci, err := p.cli.ContainerInspect(ctx, id)
		if err != nil {
			return "", p.engineErr("inspect container "+shortID(id), err)
		}
		srcRel := from.srcRels["postgres"]
		if dv, dstRel, ok := volumeAt(ci.Mounts, pgdata); ok {
			return fillVolume, p.fillFromVolume(ctx, b, image, owner, sv, srcRel, dv, dstRel)
		}
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(p.execIn(ctx, from.src["postgres"], pgsvc.OSUser, pgsvc.ForkCaptureCommand(stage), pw))
	}()
	err := p.execStdin(ctx, id, pgsvc.OSUser, pgsvc.ForkFillCommand(), pr, nil)
	pr.CloseWithError(io.ErrClosedPipe)
	return fillStream, err
}

// fillFromVolume runs the fill container: the source's volume srcVol
// read-only, the copy's dstVol, the stage's files copied from srcRel to
// dstRel with cp -a as the server's own user, then the copy's
// ForkFilled marker. The container is removed whatever happens.
func (p *Provider) fillFromVolume(ctx context.Context, b *build, image string, owner fileOwner, srcVol, srcRel, dstVol, dstRel string) error {
	src := path.Join(fillSrcMount, srcRel)
	dst := path.Join(fillDstMount, dstRel)
	script := `mkdir -p "$2" && cp -a "$1/." "$2/" && touch "$2/` + pgsvc.ForkFilled + `"`
	return p.runHelper(ctx, b, image, fmt.Sprintf("%d:%d", owner.UID, owner.GID), []string{"/bin/sh", "-c", script, "fill", src, dst}, []mount.Mount{
		{Type: mount.TypeVolume, Source: srcVol, Target: fillSrcMount, ReadOnly: true},
		{Type: mount.TypeVolume, Source: dstVol, Target: fillDstMount},
	}, nil)
}
