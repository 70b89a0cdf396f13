package ondemand

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// Holders: a "last one out" rule across processes. A session that
// requested an instance holds it (a lease in the state, renewed while the
// session lives); when the session ends, ReleaseUnheld releases the
// instance only if no other holder, in this process or any other sharing
// the state, is alive. A holder that died without leaving (kill -9) is
// dead once its lease expires, or at once when its pid is gone on this
// host; the reaper releases what only dead release-on-end holders held.

// DefaultLeaseTTL is how long a lease lives without a heartbeat: holders
// renew every third of it. It bounds how long a holder that died on
// another machine keeps an instance (one on this host is seen dead at
// once by its pid).
const DefaultLeaseTTL = 30 * time.Second

// Holder is one session's identity in leases.
type Holder struct {
	// ID is unique to the session (and so to its process).
	ID string
	// Release: the session releases what it holds when it is the last
	// holder to leave (release-on-disconnect).
	Release bool
	// TTL is the lease's lifetime (default DefaultLeaseTTL).
	TTL time.Duration
}

// Hold records (or renews) h's lease on the instance address+key.
func (b *Broker) Hold(ctx context.Context, address, key string, h Holder) error {
	t, err := b.resolve(ctx, address, key, false)
	if err != nil {
		return err
	}
	if h.ID == "" {
		return refuse(Invalid, "hold %s: no holder", t)
	}
	ttl := h.TTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	return b.Store.Hold(ctx, state.Lease{Address: t.String(), Holder: h.ID, Host: state.Hostname(), PID: os.Getpid(),
		Expires: b.now().Add(ttl), Release: h.Release})
}

// Unhold drops h's lease without releasing anything.
func (b *Broker) Unhold(ctx context.Context, address, key, holder string) error {
	t, err := parseTarget(ctx, address, key)
	if err != nil {
		return err
	}
	return b.Store.Unhold(ctx, t.String(), holder)
}

// ReleaseUnheld drops holder's lease and, under the instance lock,
// releases the instance if no live holder is left; held says how many
// live holders kept it. Dead leases on it are dropped with it.
func (b *Broker) ReleaseUnheld(ctx context.Context, address, key, holder string) (released bool, held int, err error) {
	t, err := b.resolve(ctx, address, key, true)
	if err != nil {
		return false, 0, err
	}
	addr := t.String()
	unlock, err := b.lock(ctx, addr, "release")
	if err != nil {
		return false, 0, err
	}
	defer unlock()
	// Under the lock: a request holds before it takes the lock, so a
	// holder that came meanwhile is seen here, and one that comes after
	// provisions anew once this release is over.
	leases, err := b.Store.HeldBy(ctx, addr)
	if err != nil {
		return false, 0, err
	}
	others := slices.DeleteFunc(leases, func(l state.Lease) bool { return l.Holder == holder })
	live, dead := splitLeases(others, b.now(), state.Hostname())
	if len(live) > 0 {
		return false, len(live), b.Store.Unhold(ctx, addr, holder)
	}
	// The holder's own lease goes only after the release: a process
	// killed in between leaves a lease of a dead holder, which the reaper
	// releases the instance for, never an instance nobody holds that
	// lives on to its ttl.
	released, err = b.releaseLocked(ctx, t, addr)
	if err != nil {
		return false, 0, err
	}
	errs := []error{b.Store.Unhold(ctx, addr, holder)}
	for _, l := range dead {
		errs = append(errs, b.Store.Unhold(ctx, addr, l.Holder))
	}
	if err := errors.Join(errs...); err != nil {
		return released, 0, fmt.Errorf("drop dead holders of %s: %w", addr, err)
	}
	return released, 0, nil
}

// splitLeases parts leases into those whose holder may be alive and the
// dead.
func splitLeases(leases []state.Lease, now time.Time, host string) (live, dead []state.Lease) {
	for _, l := range leases {
		if l.Alive(now, host) {
			live = append(live, l)
		} else {
			dead = append(dead, l)
		}
	}
	return live, dead
}
