package docker

import "slices"

// preloadArgs returns the server settings a requested extension needs at
// start. TimescaleDB must be in shared_preload_libraries (CREATE EXTENSION
// fails otherwise). It is preloaded only in sandboxes that ask for it: the
// library costs every backend memory and the start some time, and the
// allowlist has it only "when asked for explicitly". Images built for it
// (timescale/timescaledb) preload it from their postgresql.conf; the
// command line sets the same value, so they behave the same. Telemetry is
// off: a sandbox has no business calling home.
func preloadArgs(feats []string) []string {
	if !slices.Contains(feats, "timescaledb") {
		return nil
	}
	return []string{
		"-c", "shared_preload_libraries=timescaledb",
		"-c", "timescaledb.telemetry_level=off",
	}
}
