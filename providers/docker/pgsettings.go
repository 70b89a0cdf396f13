package docker

// pgLeanArgs are server settings for a disposable instance whose data
// directory is a tmpfs, chosen for memory: tmpfs pages are the container's
// memory, and so are the shared-memory pages the server touches. Each is a
// plain GUC a user of a sandbox could set the same way; none disables a
// feature (extensions, pg_dump, background workers such as TimescaleDB's
// keep working).
//
//   - shared_buffers 8MB: the tmpfs already holds every page in memory, so
//     a large buffer pool only copies it; a buffer miss costs a memcpy.
//   - wal_level minimal, max_wal_senders 0: no replication or archiving
//     from a sandbox, and bulk loads (CREATE TABLE … COPY) skip WAL.
//   - min_wal_size 2MB (with 1 MB segments, see pgInitdbArgs),
//     max_wal_size 64MB, wal_recycle off, wal_init_zero off: WAL files are
//     removed after each checkpoint instead of kept for reuse, new ones are
//     not zero-filled (sparse on tmpfs), and write bursts stay bounded.
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
// and 1 MB WAL segments instead of 16 MB, so the WAL kept on the tmpfs is
// a few MB.
const pgInitdbArgs = "--nosync --wal-segsize=1"
