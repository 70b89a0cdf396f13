package kit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// ValidateRequest re-checks a create request against the catalog: it is
// the security boundary, so a runtime does not rely on config validation
// alone. It returns the image each service runs (cfg.ImageForRef: a
// saved plan can start no image but the configured or a default one).
// caDir is where the runtime writes clients' CA files ("" for none).
func ValidateRequest(req apply.CreateRequest, cat *config.Catalog, cfg *config.Provider, caDir string) (map[string]config.Image, error) {
	if req.Address == "" || req.Lineage == "" || req.Generation < 1 {
		return nil, errors.New("invalid request: address, lineage and a generation ≥ 1 are required")
	}
	if len(req.Features) == 0 {
		return nil, errors.New("invalid request: no services")
	}
	if req.Database != "" {
		if err := config.CheckDatabase(req.Database); err != nil {
			return nil, fmt.Errorf("invalid request: %w", err)
		}
	}
	images := map[string]config.Image{}
	for _, svc := range req.Features.Services() {
		for _, f := range req.Features[svc] {
			if err := cat.CheckFeature(svc, f); err != nil {
				return nil, err
			}
		}
		if err := cat.CheckService(svc); err != nil {
			return nil, err
		}
		img, err := cfg.ImageForRef(svc, req.Images[svc], req.Features[svc])
		if err != nil {
			return nil, err
		}
		images[svc] = img
	}
	if req.Publish.TLS && caDir == "" {
		return nil, errors.New("invalid request: TLS needs a directory for CA files (Provider.CADir)")
	}
	return images, nil
}

// Check is apply.Provider's Check for any runtime: every image the plan
// starts is resolved against the catalog, then inspected (facts: from
// the runtime's cache, or by starting it), all at once.
func Check(ctx context.Context, uses []plan.ImageUse, cat *config.Catalog, cfg *config.Provider,
	facts func(ctx context.Context, service string, img config.Image) (plan.ImageCapabilities, error)) (plan.Capabilities, error) {
	caps := plan.Capabilities{}
	var mu sync.Mutex
	imgs := make(map[plan.ImageUse]config.Image, len(uses))
	for _, u := range uses {
		if err := cat.CheckService(u.Service); err != nil {
			return nil, fmt.Errorf("check %s: %w", u.Service, err)
		}
		img, err := cfg.ImageForRef(u.Service, u.Ref, nil)
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", u.Service, err)
		}
		imgs[u] = img
	}
	g, gctx := errgroup.WithContext(ctx)
	for u, img := range imgs {
		g.Go(func() error {
			f, err := facts(gctx, u.Service, img)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			caps[u] = f
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return caps, nil
}
