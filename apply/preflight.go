package apply

import (
	"context"

	"github.com/sandboxer/sandboxer/plan"
)

// Preflight checks, before anything is created, that the provider can carry
// out every create and replace of changes: the images are there (or can be
// pulled) and provide every planned feature. A shortfall comes back as a
// *plan.UnprovidableError listing all of them at once. Changes without a
// create or replace need nothing and touch nothing.
func Preflight(ctx context.Context, p Provider, changes []*plan.Change) error {
	services := (&plan.Plan{Changes: changes}).ServicesToStart()
	if len(services) == 0 {
		return nil
	}
	caps, err := p.Check(ctx, services)
	if err != nil {
		return err
	}
	return plan.Unprovidable(changes, caps)
}
