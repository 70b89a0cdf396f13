package ondemand

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Warm pools (pool { size = N } in an on-demand block).
//
// Decisions (the issue leaves them open):
//   - A member is an ordinary on-demand instance of the block's template
//     (a first provision gets the block's full opted set) at the reserved
//     key "~pool-<16 hex>": user keys start with a letter or digit
//     (keyPattern), so a member never collides with one. Its ttl is the
//     pool's (default the block's); reap and sweep treat it like any
//     instance.
//   - A request claims a member only when its own address has no record
//     (a first request): a cached instance is still reused, and one that
//     lacks something is replaced cold, as before. It claims one the cache
//     rule lets cover the request (plan.Decide says NoOp); a superset or
//     an empty pool provisions cold.
//   - A claim holds the caller's instance lock (taken by Request) and
//     try-locks the member (timeout 0: a busy member is skipped, never
//     waited for), so one member goes to one caller. Under both locks it
//     rotates the member's credentials (Rotator), then moves the record
//     to the caller's address with LabelAddress set to the member's, in
//     one state transaction (Store.Move): never two records owning one
//     instance, never an instance owned by none.
//   - Filling takes the pool lock (the lock of sandbox.NAME["~pool"]) so
//     two fillers (serve and a cron `pool fill`) do not overfill; claims
//     do not take it.
const poolKeyPrefix = config.PoolKeyPrefix

// poolLockKey names the lock fillers and drainers of one pool share.
const poolLockKey = "~pool"

// FillParallelism is how many members a fill provisions at once.
const FillParallelism = 3

// Rotator binds fresh app credentials to a running instance and returns
// the record's credentials with them (package rotate over the network).
type Rotator interface {
	Rotate(ctx context.Context, rec *state.Record) (map[string]state.Credentials, error)
}

// IsPoolKey reports whether key is a warm-pool member's.
func IsPoolKey(key string) bool { return config.IsPoolKey(key) }

// PoolStatus is a pool's state (api.PoolStatus).
type PoolStatus = api.PoolStatus

// poolBlock resolves sandbox.NAME (a key, if given, is ignored) to a
// block with a pool.
func (b *Broker) poolBlock(address string) (*config.Sandbox, error) {
	a, err := config.ParseAddress(strings.TrimSpace(address))
	if err != nil {
		return nil, refuse(Invalid, "%v", err)
	}
	sb, ok := b.Config.Sandboxes[a.Name]
	switch {
	case !ok:
		return nil, refuse(NotFound, "no sandbox block %q in the configuration", a.Name)
	case !sb.OnDemand:
		return nil, notOnDemand(a.Name)
	case sb.Pool == nil:
		return nil, refuse(Invalid, "sandbox.%s has no pool block; add pool { size = N } to it", a.Name)
	}
	return sb, nil
}

// members returns the records of the block's pool members, sorted by
// address; expired ones only when withExpired.
func (b *Broker) members(ctx context.Context, name string, withExpired bool) ([]*state.Record, error) {
	snap, err := b.Store.Inspect(ctx)
	if err != nil {
		return nil, err
	}
	prefix := `sandbox.` + name + `["` + poolKeyPrefix
	now := b.now()
	var out []*state.Record
	for addr, rec := range snap.Records {
		if strings.HasPrefix(addr, prefix) && (withExpired || !plan.Expired(rec, now)) {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

// claim hands a pool member that covers in to the caller at t, with
// fresh credentials. ok is false when none could be claimed (the caller
// provisions cold). The caller holds t's instance lock and t has no
// record.
func (b *Broker) claim(ctx context.Context, t target, in *config.Instance, prefix string) (*Result, bool) {
	if t.block == nil || t.block.Pool == nil || b.Rotator == nil {
		return nil, false
	}
	// Addresses only: each claimer reads the one member it locks (a
	// burst of 100 claimers each decoding the whole pool was most of
	// the burst's time).
	addrs, err := b.Store.Addresses(ctx, `sandbox.`+t.addr.Name+`["`+poolKeyPrefix)
	if err != nil || len(addrs) == 0 {
		return nil, false
	}
	// Concurrent claimers start at different members, so most try-locks
	// succeed at once.
	mrand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	for _, maddr := range addrs {
		res, err := b.claimOne(ctx, t, in, maddr, prefix)
		if err != nil {
			b.emitFor(events.Failed, t, 0, "claim "+maddr+": "+err.Error())
			continue
		}
		if res != nil {
			return res, true
		}
	}
	return nil, false
}

// claimOne claims the member at maddr; nil, nil when it is busy or no
// longer suits.
func (b *Broker) claimOne(ctx context.Context, t target, in *config.Instance, maddr, prefix string) (*Result, error) {
	unlock, err := b.Store.LockInstance(ctx, maddr, "claim", 0)
	if err != nil {
		return nil, nil // another claimer, a drain or reap has it
	}
	defer unlock()
	rec, err := b.Store.Get(ctx, maddr)
	if err != nil || rec == nil {
		return nil, err
	}
	if plan.Decide(in, rec, nil, plan.Options{Now: b.now()}).Action != plan.NoOp {
		return nil, nil
	}
	creds, err := b.Rotator.Rotate(ctx, rec)
	if err != nil {
		// Some services may be rotated already: nobody holds working
		// credentials for it, so it goes.
		b.discard(ctx, rec)
		return nil, err
	}
	claimed := *rec
	claimed.Address = t.String()
	claimed.LabelAddress = rec.ResourceAddress()
	claimed.Credentials = creds
	claimed.OnDemand = true
	claimed.Owner = t.owner
	// The claimant's ttl starts now, as a cold provision's would.
	claimed.ExpiresAt = time.Time{}
	if in.TTL > 0 {
		claimed.ExpiresAt = b.now().Add(in.TTL)
	}
	// One transaction: no reader sees the member and the claimant both
	// own the instance, or neither (reap would sweep it).
	if err := b.Store.Move(ctx, maddr, &claimed); err != nil {
		b.discard(ctx, rec) // its credentials are rotated: nobody could use it
		return nil, fmt.Errorf("record claimed member at %s: %w", claimed.Address, err)
	}
	ma, _ := config.ParseAddress(maddr)
	b.emitFor(events.PoolClaimed, t, claimed.Generation, ma.Key)
	if b.OnClaim != nil {
		b.OnClaim(t.addr.Name)
	}
	res := NewResult(&claimed, false, prefix)
	res.FromPool = true
	return res, nil
}

// discard removes a spoiled member; errors leave it for reap.
func (b *Broker) discard(ctx context.Context, rec *state.Record) {
	if err := b.Provider.Delete(ctx, rec); err != nil {
		return
	}
	_ = b.Store.Delete(ctx, rec.Address)
}

// PoolStatus says how full the block's pool is.
func (b *Broker) PoolStatus(ctx context.Context, address string) (*PoolStatus, error) {
	sb, err := b.poolBlock(address)
	if err != nil {
		return nil, err
	}
	ms, err := b.members(ctx, sb.Name, false)
	if err != nil {
		return nil, err
	}
	return status(sb, ms), nil
}

func status(sb *config.Sandbox, ms []*state.Record) *PoolStatus {
	st := &PoolStatus{Address: "sandbox." + sb.Name, Size: sb.Pool.Size, Ready: len(ms), Members: []string{}}
	for _, m := range ms {
		st.Members = append(st.Members, m.Address)
	}
	return st
}

// FillPool provisions members until the pool holds its size of ready
// ones, and returns once it does (or with the first error, after the
// members in flight finish).
func (b *Broker) FillPool(ctx context.Context, address string) (*PoolStatus, error) {
	sb, err := b.poolBlock(address)
	if err != nil {
		return nil, err
	}
	unlock, err := b.lock(ctx, poolLockAddr(sb.Name), "pool fill")
	if err != nil {
		return nil, err
	}
	defer unlock()
	ms, err := b.members(ctx, sb.Name, false)
	if err != nil {
		return nil, err
	}
	need := sb.Pool.Size - len(ms)
	if need <= 0 {
		return status(sb, ms), nil
	}
	var (
		mu    sync.Mutex
		ready = len(ms)
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, FillParallelism)
	)
	for range need {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			rec, err := b.fillOne(ctx, sb)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ready++
			a, _ := config.ParseAddress(rec.Address)
			b.emit(events.PoolFilled, a, rec.Generation, fmt.Sprintf("ready %d/%d", ready, sb.Pool.Size))
		}()
	}
	wg.Wait()
	ms, lerr := b.members(ctx, sb.Name, false)
	if lerr != nil {
		return nil, errors.Join(append(errs, lerr)...)
	}
	st := status(sb, ms)
	st.Filled = ready - (sb.Pool.Size - need)
	return st, errors.Join(errs...)
}

func poolLockAddr(name string) string {
	return config.Address{Name: name, Key: poolLockKey, HasKey: true}.String()
}

// fillOne provisions one member at a fresh reserved key.
func (b *Broker) fillOne(ctx context.Context, sb *config.Sandbox) (*state.Record, error) {
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	t := target{addr: config.Address{Name: sb.Name, Key: poolKeyPrefix + hex.EncodeToString(id), HasKey: true}, block: sb}
	in, err := b.desired(t, Request{})
	if err != nil {
		return nil, err
	}
	in.TTL = sb.Pool.TTL
	unlock, err := b.lock(ctx, t.String(), "pool fill")
	if err != nil {
		return nil, err
	}
	defer unlock()
	ch := plan.Decide(in, nil, nil, plan.Options{Now: b.now()})
	res, err := b.provision(ctx, t, ch, "")
	if err != nil {
		return nil, err
	}
	return res.Record, nil
}

// DrainPool tears down every member (expired ones too) and removes their
// records. Members being claimed right now are left to their claimer.
func (b *Broker) DrainPool(ctx context.Context, address string) (*PoolStatus, error) {
	sb, err := b.poolBlock(address)
	if err != nil {
		return nil, err
	}
	unlock, err := b.lock(ctx, poolLockAddr(sb.Name), "pool drain")
	if err != nil {
		return nil, err
	}
	defer unlock()
	ms, err := b.members(ctx, sb.Name, true)
	if err != nil {
		return nil, err
	}
	drained := 0
	var errs []error
	for _, m := range ms {
		ok, err := b.drainOne(ctx, m.Address)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			drained++
		}
	}
	left, err := b.members(ctx, sb.Name, false)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	st := status(sb, left)
	st.Drained = drained
	return st, errors.Join(errs...)
}

func (b *Broker) drainOne(ctx context.Context, addr string) (bool, error) {
	unlock, err := b.lock(ctx, addr, "pool drain")
	if err != nil {
		return false, err
	}
	defer unlock()
	rec, err := b.Store.Get(ctx, addr)
	if err != nil || rec == nil {
		return false, err // claimed meanwhile
	}
	a, _ := config.ParseAddress(addr)
	if err := b.Provider.Delete(ctx, rec); err != nil {
		b.emit(events.Failed, a, rec.Generation, err.Error())
		return false, fmt.Errorf("drain %s: %w", addr, err)
	}
	if err := b.Store.Delete(ctx, addr); err != nil {
		return false, fmt.Errorf("drain %s: %w", addr, err)
	}
	b.emit(events.Released, a, rec.Generation, "pool drained")
	return true, nil
}
