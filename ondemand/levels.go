package ondemand

import (
	"context"
	"sort"
	"strings"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// Level is how many instances of one on-demand block there are now: what
// a monitoring scrape shows per block.
type Level struct {
	Block string // sandbox.NAME
	// Instances are the unexpired keyed instances, pool members not
	// counted (claimed ones are: they are the caller's now).
	Instances int
	// PoolReady are the unexpired, unclaimed pool members; PoolSize is
	// the pool's configured size (0 for a block without a pool).
	PoolReady int
	PoolSize  int
}

// Levels counts the instances of every on-demand block of the
// configuration in one read of the state (no lock, no engine call), every
// tenant's included. Records of blocks the configuration no longer has
// are not counted.
func (b *Broker) Levels(ctx context.Context) ([]Level, error) {
	if b.Config == nil {
		return nil, nil
	}
	snap, err := b.Store.Inspect(ctx)
	if err != nil {
		return nil, err
	}
	by := map[string]*Level{}
	for name, sb := range b.Config.Sandboxes {
		if !sb.OnDemand {
			continue
		}
		l := &Level{Block: "sandbox." + name}
		if sb.Pool != nil {
			l.PoolSize = sb.Pool.Size
		}
		by[name] = l
	}
	now := b.now()
	for addr, rec := range snap.Records {
		if !rec.OnDemand || plan.Expired(rec, now) {
			continue
		}
		a, err := config.ParseAddress(addr)
		if err != nil || !a.HasKey || by[a.Name] == nil {
			continue
		}
		if strings.HasPrefix(a.Key, poolKeyPrefix) {
			by[a.Name].PoolReady++
		} else {
			by[a.Name].Instances++
		}
	}
	out := make([]Level, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Block < out[j].Block })
	return out, nil
}
