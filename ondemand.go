package sandboxer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/internal/records"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// Sandbox is a requested instance with its credentials (SPEC §8's
// request object); Instance is one without them.
type (
	Sandbox  = api.Sandbox
	Instance = api.Instance
)

// RequestOptions are the per-call settings of Request.
type RequestOptions struct {
	// Key names the instance; required unless the address has one
	// (sandbox.NAME["KEY"]).
	Key string
	// Extensions are extra features for this call, service → features.
	Extensions map[string][]string
	// TTL overrides the block's ttl, e.g. "2h" (at most 30d).
	TTL string
	// Profile names a profile of the block's project.
	Profile string
	// Prefix starts the names in Env ("" keeps the block's env_prefix,
	// else SANDBOXER_).
	Prefix string
	// CarryData, on a replace (a feature superset), moves the old
	// instance's data into the new one before it is handed out.
	CarryData bool
	// ReadyTimeout, e.g. "5m", is how long a provision may wait for each
	// service to answer, as asked ("": the provider's own, which grows
	// with the machine's load; SANDBOXER_READY_TIMEOUT sets its base).
	ReadyTimeout string
}

// Request ensures the on-demand instance exists and covers what is asked,
// by the cache rule: a live cached instance that covers it is returned
// (Reused), a dead one is re-provisioned, a lacking one replaced with
// rotated credentials.
func (s *Sandboxer) Request(ctx context.Context, address string, o RequestOptions) (*Sandbox, error) {
	if o.ReadyTimeout != "" {
		d, err := time.ParseDuration(o.ReadyTimeout)
		if err != nil || d <= 0 || d > 24*time.Hour {
			return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("ready_timeout %q: want a duration such as 5m (at most 24h)", o.ReadyTimeout)}
		}
		ctx = apply.WithReadyTimeout(ctx, d)
	}
	res, err := s.broker().Request(ctx, ondemand.Request{Address: address, Key: o.Key, Extensions: o.Extensions, TTL: o.TTL, Profile: o.Profile, Prefix: o.Prefix, CarryData: o.CarryData})
	if err != nil {
		return nil, classify(err)
	}
	return s.forwardResult(ctx, res)
}

// Release tears the instance down. released is false when there was
// nothing to release (a no-op, not an error).
func (s *Sandboxer) Release(ctx context.Context, address, key string) (released bool, err error) {
	released, err = s.broker().Release(ctx, address, key)
	return released, classify(err)
}

// Tenant is who a call is made for when several callers share one
// state: its name is folded into every key it names, it sees only the
// instances it owns, and its quotas bound what it may hold. Calls whose
// context carries none (WithTenant) are the operator's and see all.
type (
	Tenant = ondemand.Tenant
	Quota  = ondemand.Quota
)

// TenantNamePattern is what a tenant's name may look like.
var TenantNamePattern = ondemand.TenantNamePattern

// WithTenant returns ctx acting for t (nil: the operator).
func WithTenant(ctx context.Context, t *Tenant) context.Context { return ondemand.WithTenant(ctx, t) }

// TenantOf is the tenant ctx acts for, nil for the operator.
func TenantOf(ctx context.Context) *Tenant { return ondemand.TenantOf(ctx) }

// Holder is one session's identity in the leases that keep an instance
// while any session, in any process sharing the state, holds it.
type Holder = ondemand.Holder

// Hold records (or renews: a heartbeat) holder's lease on an instance.
// Take it before the request: a last holder releasing meanwhile then
// sees it.
func (s *Sandboxer) Hold(ctx context.Context, address string, h Holder) error {
	return classify(s.broker().Hold(ctx, address, "", h))
}

// Unhold drops holder's lease, releasing nothing.
func (s *Sandboxer) Unhold(ctx context.Context, address, holder string) error {
	return classify(s.broker().Unhold(ctx, address, "", holder))
}

// ReleaseUnheld drops holder's lease and releases the instance when no
// live holder is left anywhere; held counts those that kept it.
func (s *Sandboxer) ReleaseUnheld(ctx context.Context, address, holder string) (released bool, held int, err error) {
	released, held, err = s.broker().ReleaseUnheld(ctx, address, "", holder)
	return released, held, classify(err)
}

// Extend sets the instance's expiry to now + ttl.
func (s *Sandboxer) Extend(ctx context.Context, address, key, ttl string) (*Instance, error) {
	rec, err := s.broker().Extend(ctx, address, key, ttl)
	if err != nil {
		return nil, classify(err)
	}
	in := records.Instance(rec)
	return &in, nil
}

// SandboxList is List's answer: the on-demand instances and the records
// that cannot be read.
type SandboxList = api.SandboxList

// Sandboxes lists the on-demand instances in state, without credentials,
// with every record that cannot be read beside them (each with its
// reason): a damaged record does not hide the others.
func (s *Sandboxer) Sandboxes(ctx context.Context) (*SandboxList, error) {
	recs, damaged, err := s.broker().List(ctx)
	if err != nil {
		return nil, classify(err)
	}
	out := &SandboxList{Sandboxes: make([]Instance, 0, len(recs))}
	for _, r := range recs {
		out.Sandboxes = append(out.Sandboxes, records.Instance(r))
	}
	for _, addr := range slices.Sorted(maps.Keys(damaged)) {
		out.Damaged = append(out.Damaged, api.DamagedRecord{Address: addr, Error: damaged[addr].Error()})
	}
	return out, nil
}

// List returns the on-demand instances in state, without credentials. A
// record that cannot be read does not hide the others: they are returned
// together with an error naming every damaged record and how to restore
// or remove it.
func (s *Sandboxer) List(ctx context.Context) ([]Instance, error) {
	recs, damaged, err := s.broker().List(ctx)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]Instance, 0, len(recs))
	for _, r := range recs {
		out = append(out, records.Instance(r))
	}
	if len(damaged) > 0 {
		return out, classify((&state.Snapshot{Damaged: damaged}).DamagedError())
	}
	return out, nil
}

// DataResult is the outcome of Snapshot, Restore and Reset.
type DataResult = api.DataResult

// Snapshot saves the instance's data under name (snapshots live beside
// the state file); an existing name is ErrConflict.
//
// A tenant's snapshot names follow the one key rule: "base" is saved
// as "acme.base", so no tenant restores, overwrites or learns of
// another's; its snapshots quota counts the names it holds.
func (s *Sandboxer) Snapshot(ctx context.Context, address, name string) (*DataResult, error) {
	name = ondemand.TenantKey(TenantOf(ctx), name)
	if err := checkSnapshotName(name); err != nil {
		return nil, err
	}
	address, err := s.broker().Own(ctx, address)
	if err != nil {
		return nil, classify(err)
	}
	unlock, err := s.snapshotQuota(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return dataResult(s.data().Snapshot(ctx, address, name))
}

// snapshotQuotaLock names the lock under which a tenant's snapshots are
// counted and a new one saved.
const snapshotQuotaLock = "(tenant snapshots) "

// snapshotQuota holds, for a tenant with a snapshots quota saving a new
// name, its snapshots lock and checks the names it holds are under the
// quota (saving over a name it has is no new one); the returned func
// drops the lock once the save is done.
func (s *Sandboxer) snapshotQuota(ctx context.Context, name string) (func(), error) {
	t := TenantOf(ctx)
	if t == nil || t.Quota.Snapshots <= 0 {
		return func() {}, nil
	}
	timeout := s.opts.LockTimeout
	if timeout <= 0 {
		timeout = ondemand.DefaultLockTimeout
	}
	unlock, err := s.store.LockInstance(ctx, snapshotQuotaLock+t.Name, "snapshot", timeout)
	if err != nil {
		return nil, classify(err)
	}
	release := func() { _ = unlock() }
	all, err := SnapshotStore(s.statePath).List()
	if err != nil {
		release()
		return nil, classify(err)
	}
	held := 0
	for _, m := range all {
		if m.Name == name {
			return release, nil
		}
		if strings.HasPrefix(m.Name, t.Name+".") {
			held++
		}
	}
	if held >= t.Quota.Snapshots {
		release()
		return nil, &Error{Code: CodeQuotaExceeded,
			Message: fmt.Sprintf("quota snapshots is %d; %d held: save over one of yours, or ask the operator to remove one", t.Quota.Snapshots, held)}
	}
	return release, nil
}

// Restore replaces the instance's data with snapshot name; a missing
// snapshot is ErrNotFound.
func (s *Sandboxer) Restore(ctx context.Context, address, name string) (*DataResult, error) {
	name = ondemand.TenantKey(TenantOf(ctx), name)
	if err := checkSnapshotName(name); err != nil {
		return nil, err
	}
	address, err := s.broker().Own(ctx, address)
	if err != nil {
		return nil, classify(err)
	}
	return dataResult(s.data().Restore(ctx, address, name))
}

// Reset brings the instance back to snapshot name, or to its seed (or
// empty) when name is "", the fastest way the engine allows.
func (s *Sandboxer) Reset(ctx context.Context, address, name string) (*DataResult, error) {
	if name != "" {
		name = ondemand.TenantKey(TenantOf(ctx), name)
		if err := checkSnapshotName(name); err != nil {
			return nil, err
		}
	}
	address, err := s.broker().Own(ctx, address)
	if err != nil {
		return nil, classify(err)
	}
	return dataResult(s.data().Reset(ctx, address, name))
}

func checkSnapshotName(name string) error {
	if err := snapshot.CheckName(name); err != nil {
		return &Error{Code: CodeInvalid, Message: err.Error(), Err: err}
	}
	return nil
}

func dataResult(out *snapshot.Outcome, err error) (*DataResult, error) {
	if err != nil {
		return nil, classify(err)
	}
	return &DataResult{Address: out.Address, Generation: out.Generation, Snapshot: out.Snapshot,
		Services: out.Services, Size: out.Size, ElapsedMS: out.ElapsedMS}, nil
}
