// Package snapshot saves a sandbox instance's data to portable files and
// loads it back: snapshots (one file per service and a manifest) under the
// state directory, restore and fast reset into a live instance, and the
// data carried from an old instance into its replacement.
//
// It never talks to an engine itself: the engine work (pg_dump, pg_restore,
// Redis DUMP/RESTORE) goes through Engine, which providers implement. It
// never stores a credential: manifests hold shapes, sizes and checksums.
package snapshot
