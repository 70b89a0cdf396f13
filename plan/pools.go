package plan

import (
	"sort"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// PoolSummary is one warm pool as plan shows it. Its members are on-demand
// instances and are planned like them (reused, or destroyed when expired);
// this line says how full the pool is.
type PoolSummary struct {
	Address string `json:"address"`
	Size    int    `json:"size"`
	// Ready counts the members in state whose ttl has not run out.
	Ready int `json:"ready"`
}

// pools summarises the configuration's warm pools against snap.
func pools(cfg *config.Config, snap *state.Snapshot, now time.Time) []PoolSummary {
	var out []PoolSummary
	for name, sb := range cfg.Sandboxes {
		if !sb.OnDemand || sb.Pool == nil {
			continue
		}
		ps := PoolSummary{Address: "sandbox." + name, Size: sb.Pool.Size}
		for _, rec := range snap.Records {
			a, err := config.ParseAddress(rec.Address)
			if err == nil && a.Name == name && a.HasKey && config.IsPoolKey(a.Key) && !Expired(rec, now) {
				ps.Ready++
			}
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}
