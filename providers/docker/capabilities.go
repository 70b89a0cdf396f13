package docker

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/image"
	"golang.org/x/sync/singleflight"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/services"
)

// capabilityFormat versions what an inspection finds and how it is cached;
// bump it when either changes, so older cache entries are ignored.
// 2: the service user and the modules the image loads by itself.
const capabilityFormat = 2

// imageFacts is what one inspection of an image for a service finds: what
// plan compares (its ImageCapabilities), and what Create needs to start the image as it
// expects (who owns copied files, which modules not to load again).
type imageFacts struct {
	// The capabilities' fields are at the top of the cache file (tests
	// and people read it as before).
	plan.ImageCapabilities
	// Owner is the user the service runs as in the image (serviceuser.go).
	Owner fileOwner `json:"owner"`
	// SelfLoaded lists the module features (Redis, Valkey) the image loads
	// by itself, as redis:8's entrypoint does for every module it ships:
	// a second --loadmodule of one aborts start-up.
	SelfLoaded []string `json:"self_loaded,omitempty"`
}

// capCache remembers what each image provides. An image ID names its file
// system exactly, so what one inspection found stays true for that ID (with
// the same module paths): entries never go stale. Memory serves one process
// (a long-running serve, a plan followed by its apply); files in dir, when
// set, serve later runs, so only the first plan on a machine pays for the
// inspection.
type capCache struct {
	kit.FactsCache[imageFacts]
	flight singleflight.Group
}

// Check reports whether every image the plan starts is present locally,
// trying a pull for those that are not, and what features each provides.
// It runs at plan time so that a missing image or feature shows before
// apply changes anything. Images are inspected at once, in parallel.
func (p *Provider) Check(ctx context.Context, uses []plan.ImageUse) (plan.Capabilities, error) {
	return kit.Check(ctx, uses, p.cat, p.cfg, func(ctx context.Context, service string, img config.Image) (plan.ImageCapabilities, error) {
		ii, err := p.ensureImage(ctx, service, img.Ref)
		if err != nil {
			return plan.ImageCapabilities{}, err
		}
		f, err := p.imageFacts(ctx, service, img, ii)
		return f.ImageCapabilities, err
	})
}

// imageFacts returns what the image provides for service and how it runs
// it, from the cache or by inspecting it. Create calls it too: after the
// plan's Check it is a lookup in memory (or the cache directory); without
// one it inspects first.
func (p *Provider) imageFacts(ctx context.Context, service string, img config.Image, ii image.InspectResponse) (imageFacts, error) {
	ref := img.Ref
	key := p.capabilityKey(service, img, ii.ID)
	if f, ok := p.caps.Get(key); ok {
		f.Image = ref
		return f, nil
	}
	v, err, _ := p.caps.flight.Do(key, func() (any, error) {
		var f imageFacts
		var err error
		// How an image's features are found is the service's to say:
		// in its files (PostgreSQL, MySQL) or by loading modules (Redis,
		// Valkey).
		s, _ := services.Lookup(service)
		fi, files := s.(services.FileInspector)
		ml, modules := s.(services.ModuleLoader)
		switch {
		case files:
			f, err = p.fileCapabilities(ctx, s, fi, ref, ii)
		case modules:
			f, err = p.moduleCapabilities(ctx, s, ml, img, ii)
		default:
			return nil, fmt.Errorf("service %s is not supported by the docker provider", service)
		}
		if err != nil {
			return nil, err
		}
		cached := f
		cached.Image = "" // the same image may go by other names
		p.caps.Put(key, cached)
		return f, nil
	})
	if err != nil {
		return imageFacts{}, fmt.Errorf("find what image %q for service %s provides: %w", ref, service, err)
	}
	f := v.(imageFacts)
	f.Image = ref
	return f, nil
}

// capabilityKey names one inspection: the image, the service it runs as,
// the module paths configured for it and the allowlist it was filtered by.
func (p *Provider) capabilityKey(service string, img config.Image, imageID string) string {
	return kit.CapabilityKey("", capabilityFormat, service, imageID, img.Modules, p.cat.Allowed(service))
}

// SetCacheDir sets where inspections of images are cached across runs (""
// keeps them in memory only). Call it before the first Check.
func (p *Provider) SetCacheDir(dir string) { p.caps.Dir = dir }

// Inspected reports a whole inspection (kit.Inspection).
func (f imageFacts) Inspected() bool { return f.Features != nil }
