package plan

import "github.com/sandboxer/sandboxer/config"

// ServicesToStart lists the services any create or replace in the plan
// will start: what a provider must Check before apply begins.
func (p *Plan) ServicesToStart() []string {
	seen := config.FeatureSet{}
	for _, c := range p.Changes {
		if c.Action == Create || c.Action == CreateThenDelete {
			seen = seen.Union(c.After.Features)
		}
	}
	return seen.Services()
}
