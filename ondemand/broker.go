package ondemand

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/state"
)

// Store is the part of state.Backend the broker uses. Every call is one
// short transaction or one lock.
type Store interface {
	Get(ctx context.Context, addr string) (*state.Record, error)
	Put(ctx context.Context, rec *state.Record) error
	Delete(ctx context.Context, addr string) error
	// Move deletes from and puts rec in one transaction (a pool claim).
	Move(ctx context.Context, from string, rec *state.Record) error
	Snapshot(ctx context.Context) (*state.Snapshot, error)
	Addresses(ctx context.Context, prefix string) ([]string, error)
	Inspect(ctx context.Context) (*state.Snapshot, error)
	EnsureLineage(ctx context.Context) (string, error)
	Lock(ctx context.Context, operation string, timeout time.Duration) (func() error, error)
	LockInstance(ctx context.Context, addr, operation string, timeout time.Duration) (func() error, error)
	// Leases: who still holds an instance (hold.go).
	state.Leases
}

var _ Store = state.Backend(nil)

// MaxTTL bounds a per-call --ttl: an on-demand sandbox is for a piece of
// work, and a typo like "3000h" should not keep one alive for months. It
// is the configuration's bound, so flags, the API and HCL agree.
const MaxTTL = config.MaxTTL

// DefaultLockTimeout is how long a call waits for another command working
// on the same instance (typically a provision: seconds).
const DefaultLockTimeout = 5 * time.Minute

// keyPattern is what a key may look like: it becomes part of Docker
// container and network names and of the address, so it stays within
// what both accept without escaping.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// Broker serves on-demand calls against one configuration and state. It
// is safe for concurrent use: all coordination is through the store's
// instance locks, which also serialise against other processes.
type Broker struct {
	Config   *config.Config
	Catalog  *config.Catalog
	Store    Store
	Provider apply.Provider
	// Data seeds new instances and carries data across replaces (nil:
	// a seed or carry fails the request).
	Data apply.DataMover
	// Events hears every transition; nil discards them.
	Events events.Sink
	// Now is the clock (default time.Now).
	Now func() time.Time
	// LockTimeout bounds the wait for an instance another command holds
	// (default DefaultLockTimeout).
	LockTimeout time.Duration
	// Rotator binds fresh credentials to a claimed pool member (pool.go);
	// nil: pools are never claimed, every request provisions cold.
	Rotator Rotator
	// OnClaim, when set, hears the block name after each pool claim, so
	// a keeper can refill (serve).
	OnClaim func(block string)
}

// target is a validated on-demand address.
type target struct {
	addr  config.Address
	block *config.Sandbox // nil when the block is no longer configured
	// owner is the tenant the call is for ("" for the operator); its
	// name is already folded into addr's key (TenantKey).
	owner string
	// start is when the request began (zero for other calls): the
	// events that answer it (reused, provisioned, replaced, pool_claimed)
	// carry the time since.
	start time.Time
}

func (t target) String() string { return t.addr.String() }

// parseTarget turns an address (sandbox.NAME or sandbox.NAME["KEY"]) and an
// optional separate key into a keyed address, validating the key. It is
// the one key rule: the key comes in the address or beside it (never two
// different ones), and a tenant's is folded with its name (TenantKey).
func parseTarget(ctx context.Context, address, key string) (config.Address, error) {
	a, err := config.ParseAddress(strings.TrimSpace(address))
	if err != nil {
		return config.Address{}, refuse(Invalid, "%v", err)
	}
	switch {
	case a.HasKey && key != "" && key != a.Key:
		return config.Address{}, refuse(Invalid, "the address has key %q but --key says %q; give the key once", a.Key, key)
	case !a.HasKey && key == "":
		return config.Address{}, refuse(Invalid, "%s needs a key: --key K, or the address sandbox.%s[\"K\"]", a, a.Name)
	case !a.HasKey:
		a = config.Address{Name: a.Name, Key: key, HasKey: true}
	}
	if !keyPattern.MatchString(a.Key) {
		return config.Address{}, badKey(a.Key)
	}
	a.Key = TenantKey(TenantOf(ctx), a.Key)
	if !keyPattern.MatchString(a.Key) {
		return config.Address{}, refuse(Invalid,
			"invalid key %q: a key is 1 to 63 characters, letters, digits, '_', '.' and '-', starting with a letter or digit (it becomes part of container names)", a.Key)
	}
	return a, nil
}

func badKey(key string) error {
	return refuse(Invalid,
		"invalid key %q: a key is 1 to 63 characters, letters, digits, '_', '.' and '-', starting with a letter or digit (it becomes part of container names)", key)
}

// resolve validates address+key against the configuration, for the
// caller ctx carries (TenantOf). A missing block is NotFound unless
// allowGone (release may give back an instance whose block was since
// removed).
func (b *Broker) resolve(ctx context.Context, address, key string, allowGone bool) (target, error) {
	// A declared, non-on-demand block is the more useful thing to say than
	// a missing key.
	if pa, err := config.ParseAddress(strings.TrimSpace(address)); err == nil {
		if sb, ok := b.Config.Sandboxes[pa.Name]; ok && !sb.OnDemand {
			return target{}, notOnDemand(pa.Name)
		}
	}
	a, err := parseTarget(ctx, address, key)
	if err != nil {
		return target{}, err
	}
	owner := ""
	if t := TenantOf(ctx); t != nil {
		owner = t.Name
		if len(t.Blocks) > 0 && !slices.Contains(t.Blocks, a.Name) {
			return target{}, refuse(NotFound, "no sandbox block %q for this tenant", a.Name)
		}
	}
	sb, ok := b.Config.Sandboxes[a.Name]
	switch {
	case !ok && allowGone:
		return target{addr: a, owner: owner}, nil
	case !ok:
		return target{}, refuse(NotFound, "no sandbox block %q in the configuration%s", a.Name, b.onDemandBlocks())
	case !sb.OnDemand:
		return target{}, notOnDemand(a.Name)
	}
	return target{addr: a, block: sb, owner: owner}, nil
}

func notOnDemand(name string) error {
	return refuse(Invalid, "sandbox.%s is not an on-demand block (it has no on_demand = true); its instances are managed by plan and apply", name)
}

func (b *Broker) onDemandBlocks() string {
	var names []string
	for name, sb := range b.Config.Sandboxes {
		if sb.OnDemand {
			names = append(names, "sandbox."+name)
		}
	}
	if len(names) == 0 {
		return "; it declares no on-demand blocks"
	}
	sort.Strings(names)
	return "; on-demand blocks: " + strings.Join(names, ", ")
}

// parseTTL validates a per-call TTL with the bounds the configuration's
// ttl has (config.MinTTL to config.MaxTTL), except that "0" (never) is refused:
// omit the ttl to use the block's.
func parseTTL(s string) (time.Duration, error) {
	d, err := config.ParseTTLBounded(strings.TrimSpace(s), false)
	if err != nil {
		return 0, refuse(Invalid, "%v (omit it to use the block's ttl)", err)
	}
	return d, nil
}

// lock takes the instance lock, turning contention into a Busy error.
func (b *Broker) lock(ctx context.Context, addr, operation string) (func() error, error) {
	timeout := b.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	unlock, err := b.Store.LockInstance(ctx, addr, operation, timeout)
	var le *state.LockedError
	if errors.As(err, &le) {
		return nil, &Error{Kind: Busy, Msg: fmt.Sprintf("%v; gave up after %s", le, timeout)}
	}
	return unlock, err
}

func (b *Broker) now() time.Time {
	if b.Now == nil {
		return time.Now().UTC()
	}
	return b.Now().UTC()
}

func (b *Broker) emit(typ events.Type, a config.Address, gen int, reason string) {
	b.emitOwned(typ, a, "", gen, reason)
}

// emitFor is emit for a target: the event names its owner.
func (b *Broker) emitFor(typ events.Type, t target, gen int, reason string) {
	if b.Events == nil {
		return
	}
	e := events.Event{Time: b.now(), Event: typ, Address: t.addr.String(), Key: t.addr.Key, Owner: t.owner, Generation: gen, Reason: reason}
	switch typ {
	case events.Reused, events.Provisioned, events.Replaced, events.PoolClaimed:
		if !t.start.IsZero() {
			e.ElapsedMS = max(time.Since(t.start).Milliseconds(), 0)
		}
	}
	b.Events.Emit(e)
}

func (b *Broker) emitOwned(typ events.Type, a config.Address, owner string, gen int, reason string) {
	if b.Events == nil {
		return
	}
	b.Events.Emit(events.Event{Time: b.now(), Event: typ, Address: a.String(), Key: a.Key, Owner: owner, Generation: gen, Reason: reason})
}
