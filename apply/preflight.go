package apply

import (
	"context"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// Preflight checks, before anything is created, that the provider can carry
// out every create and replace of changes: the images are there (or can be
// pulled) and provide every planned feature. A shortfall comes back as a
// *plan.UnprovidableError listing all of them at once. Changes without a
// create or replace need nothing and touch nothing.
func Preflight(ctx context.Context, p Provider, changes []*plan.Change) error {
	services := ServicesToProvision(changes)
	if len(services) == 0 {
		return nil
	}
	caps, err := p.Check(ctx, services)
	if err != nil {
		return err
	}
	return plan.Unprovidable(changes, caps)
}

// ServicesToProvision lists, sorted, the services any create or replace of
// changes will start.
func ServicesToProvision(changes []*plan.Change) []string {
	seen := config.FeatureSet{}
	for _, c := range changes {
		if (c.Action == plan.Create || c.Action == plan.CreateThenDelete) && c.After != nil {
			seen = seen.Union(c.After.Features)
		}
	}
	return seen.Services()
}
