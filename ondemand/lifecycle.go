package ondemand

import (
	"context"
	"fmt"
	"sort"

	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Release tears an instance down and removes its record. An instance that
// is not there (never requested, already released or reaped) is a cheap
// no-op: released is false, err nil, and the engine is not contacted.
func (b *Broker) Release(ctx context.Context, address, key string) (released bool, err error) {
	t, err := b.resolve(ctx, address, key, true)
	if err != nil {
		return false, err
	}
	addr := t.String()
	// Look before locking: releasing what is not there must stay cheap.
	// If a request records it right after this look, the release simply
	// happened first. Another tenant's is as good as not there.
	if rec, err := b.Store.Get(ctx, addr); err != nil || rec == nil || !owns(ctx, rec) {
		return false, err
	}
	unlock, err := b.lock(ctx, addr, "release")
	if err != nil {
		return false, err
	}
	defer unlock()
	return b.releaseLocked(ctx, t, addr)
}

// releaseLocked is Release under the instance lock.
func (b *Broker) releaseLocked(ctx context.Context, t target, addr string) (bool, error) {
	rec, err := b.Store.Get(ctx, addr)
	if err != nil || rec == nil || !owns(ctx, rec) {
		return false, err
	}
	if !rec.OnDemand {
		return false, refuse(Invalid, "%s was not provisioned on demand; use sandboxer destroy --target %s", addr, addr)
	}
	if err := b.Provider.Delete(ctx, rec); err != nil {
		b.emitFor(events.Failed, t, rec.Generation, err.Error())
		return false, fmt.Errorf("release %s: %w", addr, err)
	}
	if err := b.Store.Delete(ctx, addr); err != nil {
		return false, fmt.Errorf("release %s: %w", addr, err)
	}
	b.emitFor(events.Released, t, rec.Generation, "released")
	return true, nil
}

// Extend sets an instance's expiry to now + ttl. An expired instance is
// not revived (reap may be removing it): request it again instead.
func (b *Broker) Extend(ctx context.Context, address, key, ttl string) (*state.Record, error) {
	t, err := b.resolve(ctx, address, key, false)
	if err != nil {
		return nil, err
	}
	if ttl == "" {
		return nil, refuse(Invalid, "extend needs a ttl, e.g. --ttl 1h")
	}
	d, err := parseTTL(ttl)
	if err != nil {
		return nil, err
	}
	addr := t.String()
	if rec, err := b.Store.Get(ctx, addr); err != nil {
		return nil, err
	} else if rec == nil || !owns(ctx, rec) {
		return nil, refuse(NotFound, "%s is not provisioned; request it first", addr)
	}
	unlock, err := b.lock(ctx, addr, "extend")
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := b.Store.Get(ctx, addr)
	if err != nil {
		return nil, err
	}
	if rec == nil || !owns(ctx, rec) {
		return nil, refuse(NotFound, "%s is not provisioned; request it first", addr)
	}
	if err := admit(ctx, t.addr, d); err != nil {
		return nil, err
	}
	now := b.now()
	if plan.Expired(rec, now) {
		return nil, refuse(Conflict, "%s expired at %s and is due for reaping; request it again", addr, rec.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z07:00"))
	}
	rec.ExpiresAt = now.Add(d)
	if err := b.Store.Put(ctx, rec); err != nil {
		return nil, err
	}
	b.emitFor(events.Extended, t, rec.Generation, "ttl "+d.String())
	return rec, nil
}

// List returns every on-demand record the caller owns (all of them for
// the operator), sorted by address, and the records it could not read (address → why), which a listing reports beside the
// rest rather than failing whole. Records hold credentials: callers must
// show them without (views.NewJSONInstance).
func (b *Broker) List(ctx context.Context) ([]*state.Record, map[string]error, error) {
	snap, err := b.Store.Inspect(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []*state.Record
	for _, r := range snap.Records {
		if r.OnDemand && owns(ctx, r) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	damaged := snap.Damaged
	if TenantOf(ctx) != nil {
		// A damaged record cannot say whose it is: it is the operator's
		// to see, not a tenant's.
		damaged = nil
	}
	return out, damaged, nil
}
