package ondemand

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// Tenant is who a call is made for when several callers share one state
// (serve --tenants, the CLI's --tenant). A call without a tenant is the
// operator's: it sees and manages every instance.
type Tenant struct {
	// Name is the tenant's name (TenantNamePattern). It is folded into
	// the key of every instance the tenant names (TenantKey) and recorded
	// as the instance's owner.
	Name string
	// Blocks are the on-demand blocks the tenant may use; empty: all.
	Blocks []string
	Quota  Quota
}

// Quota bounds what one tenant may hold; a zero field is no bound.
type Quota struct {
	// Instances is the most live on-demand instances the tenant may own
	// at once, across every process sharing the state.
	Instances int
	// MaxTTL is the longest ttl the tenant may ask for (request, extend)
	// and the longest a block's own ttl may be for it.
	MaxTTL time.Duration
	// Databases is the most live databases per test the tenant may hold
	// at once, across its hosts; Snapshots the most snapshot names it may
	// hold. Both are counted under a per-tenant lock in the state by the
	// sandboxer package, which hands both out.
	Databases int
	Snapshots int
	// RequestsPerMinute is enforced per process by the HTTP server.
	RequestsPerMinute int
}

// TenantNamePattern is what a tenant's name may look like: no '.', so
// the first '.' of a folded key always ends the tenant's name.
var TenantNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

type tenantKey struct{}

// WithTenant returns ctx carrying t: every broker call made with it acts
// for t. A nil t is the operator.
func WithTenant(ctx context.Context, t *Tenant) context.Context {
	return context.WithValue(ctx, tenantKey{}, t)
}

// TenantOf is the tenant ctx carries, nil for the operator.
func TenantOf(ctx context.Context) *Tenant {
	t, _ := ctx.Value(tenantKey{}).(*Tenant)
	return t
}

// TenantKey is the one key rule of tenancy: the key a tenant's instance
// has in state is "TENANT.KEY". A key that already starts with the
// tenant's own "TENANT." is taken as folded (so addresses the tenant was
// handed back work as given); any other key, including another tenant's
// folded one, gets the caller's prefix and so never names another
// tenant's instance. The operator's keys are used as given.
func TenantKey(t *Tenant, key string) string {
	if t == nil || strings.HasPrefix(key, t.Name+".") {
		return key
	}
	return t.Name + "." + key
}

// owns reports whether the caller of ctx may see rec: the operator sees
// all, a tenant only the records it owns.
func owns(ctx context.Context, rec *state.Record) bool {
	t := TenantOf(ctx)
	return t == nil || rec.Owner == t.Name
}

// admit checks the tenant may use the block and the ttl it asks for.
// A block it may not use is NotFound, as if it were not configured.
func admit(ctx context.Context, a config.Address, ttl time.Duration) error {
	t := TenantOf(ctx)
	if t == nil {
		return nil
	}
	if len(t.Blocks) > 0 && !slices.Contains(t.Blocks, a.Name) {
		return refuse(NotFound, "no sandbox block %q for this tenant", a.Name)
	}
	if t.Quota.MaxTTL > 0 && (ttl == 0 || ttl > t.Quota.MaxTTL) {
		return &Error{Kind: QuotaExceeded, Msg: fmt.Sprintf("quota max_ttl is %s; asked for %s: ask for a shorter ttl",
			t.Quota.MaxTTL, ttlText(ttl))}
	}
	return nil
}

func ttlText(d time.Duration) string {
	if d == 0 {
		return "never expiring"
	}
	return d.String()
}

// quotaLockPrefix names the instance lock that serialises the count of
// a tenant's instances across processes, and the lease address its
// reservations are kept at: not a sandbox address, so no command
// contends with it.
const quotaLockPrefix = "(tenant quota) "

// reservationTTL bounds how long a reservation for a new instance counts
// if its process dies on another host without dropping it (on this host
// a dead pid ends it at once).
const reservationTTL = 15 * time.Minute

// reserve checks, for a new instance of the tenant at addr, that its
// live instances and reservations are under the quota, and reserves a
// place (a lease at the tenant's quota address, held by addr) until the
// returned func drops it, once the instance is recorded or failed. The
// count is made under the tenant's quota lock, which is held only for
// the count, not the provision: a tenant's provisions run in parallel,
// and concurrent requests, in any process sharing the state, see each
// other's reservations. The operator and tenants without an instance
// quota get a no-op.
func (b *Broker) reserve(ctx context.Context, addr string) (func(), error) {
	t := TenantOf(ctx)
	if t == nil || t.Quota.Instances <= 0 {
		return func() {}, nil
	}
	at := quotaLockPrefix + t.Name
	unlock, err := b.lock(ctx, at, "quota")
	if err != nil {
		return nil, err
	}
	defer func() { _ = unlock() }()
	// Reservations first, records second: a request records its instance
	// before it drops its reservation, so whatever was reserved when the
	// leases were read is in one read or the other. (The other order
	// misses an instance recorded and unreserved between the two reads.)
	leases, err := b.Store.HeldBy(ctx, at)
	if err != nil {
		return nil, err
	}
	snap, err := b.Store.Inspect(ctx)
	if err != nil {
		return nil, err
	}
	now, host := b.now(), state.Hostname()
	owned := map[string]bool{}
	for _, r := range snap.Records {
		if r.OnDemand && r.Owner == t.Name && (r.ExpiresAt.IsZero() || now.Before(r.ExpiresAt)) {
			owned[r.Address] = true
		}
	}
	live := len(owned)
	for _, l := range leases {
		if l.Holder != addr && !owned[l.Holder] && l.Alive(now, host) {
			live++ // being provisioned, not yet recorded
		}
	}
	if live >= t.Quota.Instances {
		return nil, &Error{Kind: QuotaExceeded,
			Msg: fmt.Sprintf("quota instances is %d; %d live: release one (or let it expire) first", t.Quota.Instances, live)}
	}
	if err := b.Store.Hold(ctx, state.Lease{Address: at, Holder: addr, Host: host, PID: os.Getpid(), Expires: now.Add(reservationTTL)}); err != nil {
		return nil, err
	}
	return func() {
		// The instance is recorded (and counted) or failed: either way
		// the reservation goes, even if the call was cancelled.
		_ = b.Store.Unhold(context.WithoutCancel(ctx), at, addr)
	}, nil
}

// Own is the address of an instance the caller may act on (snapshot,
// restore, reset): the address with the tenant's key rule applied, when
// the instance exists and is the caller's. Another tenant's instance is
// NotFound, as a missing one is. The operator's addresses pass as given.
func (b *Broker) Own(ctx context.Context, address string) (string, error) {
	if TenantOf(ctx) == nil {
		return address, nil
	}
	t, err := b.resolve(ctx, address, "", true)
	if err != nil {
		return "", err
	}
	addr := t.String()
	rec, err := b.Store.Get(ctx, addr)
	if err != nil {
		return "", err
	}
	if rec == nil || !owns(ctx, rec) {
		return "", refuse(NotFound, "%s is not provisioned; request it first", addr)
	}
	return addr, nil
}
