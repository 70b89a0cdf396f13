package state

import (
	"context"
	"time"
)

// Failing returns a Backend whose every call fails with err: what a
// caller that opens its backend without an error path (the CLI's
// Factory.Store, the library's FromConfig) hands out when the choice of
// backend or key is bad, so the first use reports why.
func Failing(err error) Backend { return failing{err} }

type failing struct{ err error }

func (b failing) Get(context.Context, string) (*Record, error)        { return nil, b.err }
func (b failing) Put(context.Context, *Record) error                  { return b.err }
func (b failing) Delete(context.Context, string) error                { return b.err }
func (b failing) Move(context.Context, string, *Record) error         { return b.err }
func (b failing) Snapshot(context.Context) (*Snapshot, error)         { return nil, b.err }
func (b failing) Inspect(context.Context) (*Snapshot, error)          { return nil, b.err }
func (b failing) Addresses(context.Context, string) ([]string, error) { return nil, b.err }
func (b failing) EnsureLineage(context.Context) (string, error)       { return "", b.err }
func (b failing) ExpectLineage(context.Context, string, uint64) error { return b.err }
func (b failing) Backup(context.Context) (*Snapshot, error)           { return nil, b.err }
func (b failing) Rekey(context.Context) (int, error)                  { return 0, b.err }
func (b failing) Describe() string                                    { return "state" }
func (b failing) Lock(context.Context, string, time.Duration) (func() error, error) {
	return nil, b.err
}
func (b failing) LockInstance(context.Context, string, string, time.Duration) (func() error, error) {
	return nil, b.err
}
func (b failing) Hold(context.Context, Lease) error               { return b.err }
func (b failing) Unhold(context.Context, string, string) error    { return b.err }
func (b failing) HeldBy(context.Context, string) ([]Lease, error) { return nil, b.err }
