package postgres

import "slices"

// LeanArgs are server settings for a disposable instance, chosen for
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
//   - min_wal_size 2MB (with 1 MB segments, see InitdbArgs),
//     max_wal_size 64MB, wal_recycle off, wal_init_zero off: WAL files are
//     removed after each checkpoint instead of kept for reuse, new ones are
//     not zero-filled (sparse), and write bursts stay bounded.
//   - max_logical_replication_workers 0: no launcher process idling for a
//     subscription a sandbox never has.
//   - jit off: LLVM's code and caches cost tens of MB per backend on the
//     first big query, for queries a test database never makes long.
//   - huge_pages off: the default "try" may reserve huge pages that cannot
//     be shared or swapped.
var LeanArgs = []string{
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

// InitdbArgs: no fsync during initdb (nothing outlives the container),
// and 1 MB WAL segments instead of 16 MB, so the WAL kept is a few MB.
const InitdbArgs = "--nosync --wal-segsize=1"

// PreloadArgs returns the server settings a requested extension needs at
// start. TimescaleDB must be in shared_preload_libraries (CREATE EXTENSION
// fails otherwise). It is preloaded only in sandboxes that ask for it: the
// library costs every backend memory and the start some time, and the
// allowlist has it only "when asked for explicitly". Images built for it
// (timescale/timescaledb) preload it from their postgresql.conf; the
// command line sets the same value, so they behave the same. Telemetry is
// off: a sandbox has no business calling home.
func PreloadArgs(feats []string) []string {
	if !slices.Contains(feats, "timescaledb") {
		return nil
	}
	return []string{
		"-c", "shared_preload_libraries=timescaledb",
		"-c", "timescaledb.telemetry_level=off",
	}
}
