package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// MaxPoolSize bounds pool { size }: every member is a running instance
// (a PostgreSQL member holds ~30 MiB and a few processes), and a pool is
// a latency cache for one block, not a fleet. 256 holds a burst of 100
// agents' claims at once with room, on a cluster; on one Docker host a
// pool that size of PostgreSQL members takes about 8 GiB.
const MaxPoolSize = 256

// Pool is a warm pool of an on-demand block (pool { size = N }): that
// many ready instances of the block's full opted set, claimed by requests
// the cache rule lets them cover.
type Pool struct {
	Size int
	// TTL is a member's lifetime while unclaimed (0: never expires); a
	// claimed member takes the request's ttl. Default: the block's ttl.
	TTL       time.Duration
	DeclRange hcl.Range
}

// PoolKeyPrefix starts the keys of pool members: sandbox.NAME["~pool-…"].
// A user's key starts with a letter or digit, so the two never collide.
const PoolKeyPrefix = "~pool-"

// IsPoolKey reports whether key is a pool member's.
func IsPoolKey(key string) bool { return strings.HasPrefix(key, PoolKeyPrefix) }

var poolBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "size", Required: true},
		{Name: "ttl"},
	},
}

// decodePool decodes the at most one pool block of sandbox sb. It needs
// sb.OnDemand and sb.TTL decided.
func (l *loader) decodePool(sb *Sandbox, blocks hcl.Blocks) (*Pool, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var pool *Pool
	for _, b := range blocks {
		if b.Type != "pool" {
			continue
		}
		if pool != nil {
			diags = append(diags, errorDiag("Duplicate pool block",
				fmt.Sprintf("sandbox.%s already has a pool block at %s; a sandbox has at most one pool.", sb.Name, pool.DeclRange),
				b.DefRange))
			continue
		}
		if !sb.OnDemand {
			diags = append(diags, errorDiag("Pool on a sandbox that is not on demand",
				fmt.Sprintf("sandbox.%s has a pool block but no on_demand = true. A pool keeps instances ready for sandboxer request, which only on-demand sandboxes serve.", sb.Name),
				b.DefRange))
		}
		content, more := b.Body.Content(poolBlockSchema)
		diags = append(diags, more...)
		p := &Pool{TTL: sb.TTL, DeclRange: b.DefRange}
		if attr, ok := content.Attributes["size"]; ok {
			n, ok, more := l.boundedInt(attr, blockScope(), 1, MaxPoolSize)
			diags = append(diags, more...)
			if ok {
				p.Size = int(n)
			}
		}
		if attr, ok := content.Attributes["ttl"]; ok {
			d, more := l.ttl(attr, blockScope())
			diags = append(diags, more...)
			p.TTL = d
		}
		pool = p
	}
	if pool != nil && pool.Size == 0 {
		return nil, diags // invalid: reported above
	}
	return pool, diags
}
