package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"path"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
)

// Secret material reaches a container as files copied in between create and
// start, never as arguments (visible in `ps` and `docker inspect`) and, but
// for the postgres contract's POSTGRES_PASSWORD_FILE pointer, never as
// environment. The directory lives outside every VOLUME path: those get a
// tmpfs at start, which would hide a file copied in before.
//
// The files are owned by the image's service user (serviceuser.go), read
// from the image, never assumed: PostgreSQL refuses a key file owned by
// another user, and a 0600 file of another uid cannot be read at all.
const secretDir = "/etc/sandboxer"

// containerFile is one file to put into a created container.
type containerFile struct {
	Path    string // absolute; its directory must exist in the image or be secretDir
	Content []byte
	Mode    int64
}

// secretPath is where a file named name ends up in the container.
func secretPath(name string) string { return path.Join(secretDir, name) }

// copyFiles puts files into a created, not yet started container. All of
// them travel in one tar extracted at "/": every CopyToContainer costs the
// engine a mount of the container's file system and a helper process
// (about 100 ms here), whatever the size. secretDir is created; every other
// directory must already exist in the image. The engine keeps the owner the
// tar header names: owner.
func (p *Provider) copyFiles(ctx context.Context, id string, owner fileOwner, files ...containerFile) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dir := strings.TrimPrefix(secretDir, "/") + "/"
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: now}); err != nil {
		return err
	}
	for _, f := range files {
		h := &tar.Header{
			Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Size: int64(len(f.Content)),
			Uid: owner.UID, Gid: owner.GID, ModTime: now,
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := p.cli.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return p.engineErr("copy files into container", err)
	}
	return nil
}
