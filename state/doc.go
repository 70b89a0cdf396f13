// Package state keeps what sandboxer has provisioned in a local bbolt file,
// so later commands can plan against it, reuse it and tear it down.
//
// The file holds two buckets: "meta" (lineage, serial, schema version) and
// "sandboxes" (address → JSON record stamped with the schema version that
// wrote it). A Store is a path, not an open database: every call opens the
// file, runs one short transaction and closes it again, so another
// sandboxer process (a second terminal, the on-demand HTTP server) is never
// shut out for longer than a few milliseconds. Readers open the file
// read-only, so reading never writes.
//
// Guarantees callers rely on:
//   - The serial moves only when stored bytes change, and a write is refused
//     when the file's lineage is not the one this Store first saw.
//   - The first write made through a Store value (one command's write-set)
//     is preceded by a copy of the file to "<path>.backup".
//   - A file that is not a sandboxer state (corrupt, empty, foreign, written
//     by a newer sandboxer) is reported with an error naming it and is never
//     modified.
//   - Operation locks are flock(2) side files, released by the kernel when
//     the holder dies, so a crash never wedges the state.
//
// What this package must never do:
//   - call a provider, Docker or the network, or hold a transaction (or the
//     file open) across any I/O other than the state file itself;
//   - keep package-level mutable state: everything lives on the Store;
//   - print: it returns errors and data, and the CLI renders them.
package state
