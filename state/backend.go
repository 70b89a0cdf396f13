package state

import (
	"context"
	"time"
)

// Backend is where a state lives: the embedded bbolt file (*Store, the
// default) or a shared database (package state/pgstate). It is modelled
// on Terraform's statemgr, cut down to what sandboxer's commands use:
// records one at a time, the lineage and serial that tie a saved plan to
// the state it was made against, a whole-state lock and independent
// per-instance locks whose contention names the holder, and a backup of
// the state as it was before this value's first write.
//
// Every backend keeps the same promises, checked by package
// state/statetest: the serial moves only when a stored record changes,
// and with it in one step; a value refuses to write into a state whose
// lineage differs from the one it first saw (*LineageError); a read of
// records a newer sandboxer wrote fails (*FutureSchemaError) instead of
// dropping fields; a lock dies with its holder (a crash never wedges the
// state); and secrets in records are sealed when a key is configured
// (see Keyring).
//
// Use one value per command: like *Store, a value remembers the first
// lineage it saw and takes the backup before its first write.
type Backend interface {
	// Get reads one record (nil, nil when absent).
	Get(ctx context.Context, addr string) (*Record, error)
	// Put writes one record; the serial moves only when it changes. It
	// creates the state, with a random lineage, on the first write.
	Put(ctx context.Context, rec *Record) error
	// Delete removes a record; deleting an absent one changes nothing.
	Delete(ctx context.Context, addr string) error
	// Move removes the record at from and stores rec (at rec.Address) in
	// one step: no reader sees both or, after a crash, either half alone.
	Move(ctx context.Context, from string, rec *Record) error
	// Snapshot reads every record in one consistent read; a record that
	// cannot be read fails it.
	Snapshot(ctx context.Context) (*Snapshot, error)
	// Addresses lists, in order, the addresses of the records whose
	// address starts with prefix ("" for all), decoding none: a pool
	// claim picks a member by address, then reads only that one.
	Addresses(ctx context.Context, prefix string) ([]string, error)
	// Inspect is Snapshot with unreadable records set aside in
	// Snapshot.Damaged.
	Inspect(ctx context.Context) (*Snapshot, error)
	// EnsureLineage returns the lineage, creating an empty state first
	// when there is none.
	EnsureLineage(ctx context.Context) (string, error)
	// ExpectLineage is a *StaleError unless the state has this lineage
	// and serial (an absent state has "" and 0).
	ExpectLineage(ctx context.Context, lineage string, serial uint64) error
	// Lock takes the whole-state lock, waiting up to timeout; contention
	// is a *LockedError naming the holder.
	Lock(ctx context.Context, operation string, timeout time.Duration) (unlock func() error, err error)
	// LockInstance takes one address's lock, independent of the others
	// and of the state lock.
	LockInstance(ctx context.Context, addr, operation string, timeout time.Duration) (unlock func() error, err error)
	// Backup reads the state as it was before this value's first write
	// (nil, nil when nothing was kept: no write yet, or the state did not
	// exist before it).
	Backup(ctx context.Context) (*Snapshot, error)
	// Rekey seals every record (and whatever the backend keeps of earlier
	// versions) under the keyring's current key, or stores them in the
	// clear when it has none, in one step; it returns how many records it
	// rewrote. Records it cannot open are an error and nothing changes.
	Rekey(ctx context.Context) (int, error)
	// Describe names the state for messages: a file path, or a database
	// without its password.
	Describe() string
	// Leases: who still holds an instance, across processes and machines
	// (release-on-disconnect's last-one-out rule).
	Leases
}

var _ Backend = (*Store)(nil)
