package docker

import (
	"path"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/image"

	"github.com/sandboxer/sandboxer/config"
)

// dataMounts places a service's data directory (PostgreSQL's PGDATA,
// MySQL's datadir: services.Start.NeedsData) as storage says, and puts a
// tmpfs on every other path the image declares as a VOLUME (see
// tmpfsMounts), so no unlabelled volume is made.
//
// The default, config.StorageVolume, is an anonymous volume labelled like
// the container. Nothing in it needs to outlive the container, but a tmpfs
// pins every page of an idle cluster (three template databases and the
// app's, about 36 MB) in memory that cannot be reclaimed, while with fsync
// off the volume's pages are ordinary page cache the kernel can drop.
// Measured with docker stats on one idle bare cluster: 63 MiB on a tmpfs,
// 45 MiB on a volume; a postgres+redis sandbox 52–55 MiB against 78 MiB.
// The price is the first start: initdb and CREATE DATABASE go through the
// filesystem's journal, about 0.5–0.8 s more on this machine (ext4 with
// discard), which config.StorageTmpfs buys back for those who have the
// memory. Not the container's writable layer: on a fuse-overlayfs engine
// every write goes through FUSE, and initdb was slowest there. A volume is
// also what a plain `docker run postgres` gets (the image declares one),
// and the data survives a container restart as it would there.
//
// When the data directory lies below a declared VOLUME, as in the
// postgres:18 images (PGDATA /var/lib/postgresql/18/docker, VOLUME
// /var/lib/postgresql), the labelled volume goes on that VOLUME path, the
// way `docker run` would mount the image's own volume: the data
// directory is then made inside it by the entrypoint, and no mount hides
// another.
func dataMounts(ii image.InspectResponse, dataDir, storage string) (tmpfs map[string]string, volumes []string) {
	tmpfs = tmpfsMounts(ii)
	if storage == config.StorageTmpfs {
		// A data directory below a declared VOLUME is on that VOLUME's
		// tmpfs already; one mount inside another would only hide it.
		for v := range tmpfs {
			if below(dataDir, v) {
				return tmpfs, nil
			}
		}
		tmpfs[dataDir] = ""
		return tmpfs, nil
	}
	for v := range tmpfs {
		// Every declared VOLUME that holds the data directory gets a
		// labelled volume (one, but for odd images), none a tmpfs.
		if below(dataDir, v) {
			volumes = append(volumes, v)
			delete(tmpfs, v)
		}
	}
	if len(volumes) == 0 {
		return tmpfs, []string{dataDir}
	}
	slices.Sort(volumes)
	return tmpfs, volumes
}

// below reports whether path p is dir or inside it.
func below(p, dir string) bool {
	p, dir = path.Clean(p), path.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
