// Package pgstate keeps sandboxer's state in a PostgreSQL database, so a
// team, CI runners and several `serve` replicas share one state and no
// single disk holds the record of every live sandbox. It implements
// state.Backend and passes the same conformance suite as the bbolt file
// (state/statetest).
//
// Layout (tables in the connection's current schema; choose one with the
// URL's search_path, e.g. ?search_path=team_a):
//   - sandboxer_meta: one row with the lineage, the serial, the newest
//     record schema written, the version of this layout, the passphrase
//     salt and the serial the current backup starts from;
//   - sandboxer_records: address → record bytes (the bbolt file's JSON,
//     secrets sealed when a key is set);
//   - sandboxer_history: the bytes each write replaced, from which Backup
//     rebuilds the state as it was before the last write-set;
//   - sandboxer_locks: who holds each lock (host, pid, operation).
//
// Rules:
//   - A record write is one transaction touching one record row, one
//     history row and the meta row (serial), whatever the state's size;
//     serial and lineage move together in it.
//   - Locks are session advisory locks held on one dedicated connection
//     per Backend value: they die with the process (or its connection),
//     so a crash never wedges the state. The row in sandboxer_locks only
//     describes the holder; the advisory lock decides.
//   - Nothing is created by reads: a database without the tables reads as
//     an empty state. Tables are made on the first write or lock.
//   - A layout or record schema newer than this build is refused, never
//     rewritten.
//   - The connection URL holds a password: it is never printed. Describe
//     and every error name the database without it.
package pgstate
