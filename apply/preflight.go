package apply

import (
	"context"

	"github.com/sandboxer/sandboxer/plan"
)

// Preflight checks, before anything is created, that the provider can carry
// out every create and replace of changes: the images are there (or can be
// pulled) and provide every planned feature. A shortfall comes back as a
// *plan.UnprovidableError listing all of them at once. Then, when data (may
// be nil) is a SeedChecker, that every seed fits its instance (a seed
// snapshot needs the features its source had). Changes without a create or
// replace need nothing and touch nothing.
func Preflight(ctx context.Context, p Provider, changes []*plan.Change, data DataMover) error {
	images := plan.ImagesToStart(changes)
	if len(images) == 0 {
		return nil
	}
	caps, err := p.Check(ctx, images)
	if err != nil {
		return err
	}
	if err := plan.Unprovidable(changes, caps); err != nil {
		return err
	}
	plan.NoteGenerations(changes, caps)
	return checkSeeds(ctx, data, changes)
}
