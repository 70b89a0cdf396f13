package sandboxer

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/rotate"
)

// PoolStatus is a warm pool's state: its size, ready members and what a
// fill or drain did.
type PoolStatus = api.PoolStatus

// PoolRefreshEvery is how often KeepPoolsFull looks again without a claim
// to react to: members expire or get reaped.
const PoolRefreshEvery = 30 * time.Second

// poolKeeper wakes KeepPoolsFull after a claim. It is the one piece of
// state a Sandboxer shares between the brokers it makes.
type poolKeeper struct {
	kick chan struct{}
}

func newPoolKeeper() *poolKeeper { return &poolKeeper{kick: make(chan struct{}, 1)} }

// claimed is the brokers' OnClaim: it never blocks a request.
func (k *poolKeeper) claimed(string) {
	select {
	case k.kick <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// rotator is what binds fresh credentials at a pool claim: over the
// network, whatever runtime made the instance.
func (s *Sandboxer) rotator() rotate.Network { return rotate.Network{} }

// PoolStatus says how full the pool of address's block (sandbox.NAME) is.
func (s *Sandboxer) PoolStatus(ctx context.Context, address string) (*PoolStatus, error) {
	st, err := s.broker().PoolStatus(ctx, address)
	return st, classify(err)
}

// FillPool provisions members until the block's pool is full and returns
// once it is.
func (s *Sandboxer) FillPool(ctx context.Context, address string) (*PoolStatus, error) {
	st, err := s.broker().FillPool(ctx, address)
	return st, classify(err)
}

// DrainPool tears down every unclaimed member of the block's pool.
func (s *Sandboxer) DrainPool(ctx context.Context, address string) (*PoolStatus, error) {
	st, err := s.broker().DrainPool(ctx, address)
	return st, classify(err)
}

// Pools lists the pooled blocks' addresses, sorted.
func (s *Sandboxer) Pools() []string {
	var out []string
	if s.cfg == nil {
		return nil
	}
	for name, sb := range s.cfg.Sandboxes {
		if sb.OnDemand && sb.Pool != nil {
			out = append(out, "sandbox."+name)
		}
	}
	sort.Strings(out)
	return out
}

// KeepPoolsFull fills every pool now, again after each claim made through
// this Sandboxer, and every PoolRefreshEvery, until ctx ends (serve runs
// it). A failed fill is reported to onErr (nil: ignored) and retried at
// the next wake-up; it never stops the loop.
func (s *Sandboxer) KeepPoolsFull(ctx context.Context, onErr func(address string, err error)) {
	pools := s.Pools()
	if len(pools) == 0 {
		return
	}
	tick := time.NewTicker(PoolRefreshEvery)
	defer tick.Stop()
	for {
		for _, addr := range pools {
			if _, err := s.FillPool(ctx, addr); err != nil && onErr != nil && !errors.Is(err, context.Canceled) {
				onErr(addr, err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.pools.kick:
		case <-tick.C:
		}
	}
}
