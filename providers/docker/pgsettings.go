package docker

import "github.com/docker/docker/api/types/image"

// pgLeanArgs are server settings for a disposable instance, chosen for
// memory: the shared-memory pages the server touches are the container's
// memory, and so are the data pages it keeps reading. Each is a
// plain GUC a user of a sandbox could set the same way; none disables a
// feature (extensions, pg_dump, background workers such as TimescaleDB's
// keep working).
//
//   - shared_buffers 8MB: with fsync off the page cache holds the data
//     (see pgDataMounts), so a large buffer pool only copies it; a buffer
//     miss costs a memcpy.
//   - wal_level minimal, max_wal_senders 0: no replication or archiving
//     from a sandbox, and bulk loads (CREATE TABLE … COPY) skip WAL.
//   - min_wal_size 2MB (with 1 MB segments, see pgInitdbArgs),
//     max_wal_size 64MB, wal_recycle off, wal_init_zero off: WAL files are
//     removed after each checkpoint instead of kept for reuse, new ones are
//     not zero-filled (sparse), and write bursts stay bounded.
//   - max_logical_replication_workers 0: no launcher process idling for a
//     subscription a sandbox never has.
//   - jit off: LLVM's code and caches cost tens of MB per backend on the
//     first big query, for queries a test database never makes long.
//   - huge_pages off: the default "try" may reserve huge pages that cannot
//     be shared or swapped.
var pgLeanArgs = []string{
	"-c", "shared_buffers=8MB",
	"-c", "wal_level=minimal",
	"-c", "max_wal_senders=0",
	"-c", "min_wal_size=2MB",
	"-c", "max_wal_size=64MB",
	"-c", "wal_recycle=off",
	"-c", "wal_init_zero=off",
	"-c", "max_logical_replication_workers=0",
	"-c", "jit=off",
	"-c", "huge_pages=off",
}

// pgInitdbArgs: no fsync during initdb (nothing outlives the container),
// and 1 MB WAL segments instead of 16 MB, so the WAL kept is a few MB.
const pgInitdbArgs = "--nosync --wal-segsize=1"

// pgDataMounts puts the data directory on an anonymous volume, labelled
// like the container, and a tmpfs on every other path the image declares
// as a VOLUME (see tmpfsMounts).
//
// Not a tmpfs, although nothing in it needs to outlive the container: a
// tmpfs pins every page of an idle cluster (three template databases and
// the app's, about 36 MB) in memory that cannot be reclaimed, and with
// fsync off the volume's pages are ordinary page cache the kernel can
// drop. Measured with docker stats on one idle instance: 63 MiB on a
// tmpfs, 45 MiB on a volume; a first start takes about 0.3 s longer.
// Not the container's writable layer either: on a fuse-overlayfs engine
// every write goes through FUSE, and initdb was slowest there. A volume is
// also what a plain `docker run postgres` gets (the image declares one),
// and the data now survives a container restart as it would there.
func pgDataMounts(ii image.InspectResponse, pgdata string) (tmpfs map[string]string, volumes []string) {
	tmpfs = tmpfsMounts(ii)
	delete(tmpfs, pgdata)
	return tmpfs, []string{pgdata}
}
