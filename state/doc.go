// Package state keeps what sandboxer has provisioned, so later commands
// can plan against it, reuse it and tear it down. Backend is what every
// place that holds a state offers (see backend.go; package state/pgstate
// is the PostgreSQL one, state/statetest the suite each passes); Store,
// the default, is a local bbolt file.
//
// Secrets (the passwords in Credentials) are sealed when a Keyring with a
// current key is given: AES-256-GCM, bound by its additional data to
// record, service and field, tagged with the key id so a Keyring with old
// keys opens what an earlier key sealed. A sealed secret that no key opens
// fails the read with a *KeyError; it is never returned as it is.
//
// The file holds two buckets: "meta" (lineage, serial, schema version) and
// "sandboxes" (address → JSON record stamped with the schema version that
// wrote it). A Store is a path, not an open database: the file is open
// only while a call of this Store is in flight, for one short transaction
// each, so another sandboxer process (a second terminal, the on-demand
// HTTP server) is never shut out for longer than a few milliseconds.
// Readers open the file read-only, so reading never writes. Within one
// process the Store's calls meet before the file's flock, not at it
// (bbolt retries a held flock only every 50 ms): reads in flight together
// share one read-only handle, reads during a write use the write's
// handle, and writes that arrive while one is in flight are committed
// together in the next transaction, one fsync for all (commit.go).
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
