package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sandboxer/sandboxer/config"
)

// ImageUse is one image a plan starts for a service.
type ImageUse struct {
	Service string
	Ref     string
	// Runtime is where the image runs: "" for docker, as Sandbox.Runtime.
	Runtime string
}

// ChooseImages sets, on every create and replace, the image each service
// will run (Sandbox.Images): the configured one, or the default image that
// provides the features the new instance gets (config.Provider.ImageFor).
// It is decided here, in the plan, so that the plan shows it and apply
// starts exactly that. When no single default image provides a service's
// features it returns a *NoImageError listing every such instance; the
// plan is then refused. Like Build it is pure.
func ChooseImages(changes []*Change, prov *config.Provider) error {
	if prov == nil {
		return nil // no provider configuration: the provider chooses (tests)
	}
	return ChooseImagesFor(changes, func(string) *config.Provider { return prov })
}

// ChooseImagesFor is ChooseImages where each change's runtime has its own
// provider configuration (config.Config.ProviderFor).
func ChooseImagesFor(changes []*Change, providerFor func(runtime string) *config.Provider) error {
	// Pieces of the changes are chosen for on every core; each piece
	// keeps its refusals and its first error, and they are joined in
	// order, so the result is what one loop over the changes gives.
	type piece struct {
		refusals []ImageRefusal
		err      error
	}
	pieces := make([]piece, len(changes))
	inPieces(len(changes), func(lo, hi int) {
		pieces[lo].refusals, pieces[lo].err = chooseImages(changes[lo:hi], providerFor)
	})
	var out []ImageRefusal
	for _, pc := range pieces {
		if pc.err != nil {
			return pc.err
		}
		out = append(out, pc.refusals...)
	}
	if len(out) == 0 {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Addr.String() < out[j].Addr.String() })
	return &NoImageError{Refusals: out}
}

// chooseImages sets the images of changes, stopping at the first error
// that is not a refusal.
func chooseImages(changes []*Change, providerFor func(runtime string) *config.Provider) ([]ImageRefusal, error) {
	var out []ImageRefusal
	// Instances mostly share a few feature sets: each is looked up once.
	type choice struct {
		img config.Image
		err error
	}
	memo := map[string]choice{}
	for _, c := range changes {
		if (c.Action != Create && c.Action != CreateThenDelete) || c.After == nil {
			continue
		}
		c.After.Images = make(map[string]string, len(c.After.Features))
		for _, svc := range c.After.Features.Services() {
			key := c.After.Runtime + "\x00" + svc + "\x00" + strings.Join(c.After.Features[svc], ",")
			ch, ok := memo[key]
			if !ok {
				ch.img, ch.err = providerFor(c.After.RuntimeName()).ImageFor(svc, c.After.Features[svc])
				memo[key] = ch
			}
			img, err := ch.img, ch.err
			var ne *config.NoDefaultImageError
			if errors.As(err, &ne) {
				out = append(out, ImageRefusal{Addr: c.Addr, Err: ne})
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Addr, err)
			}
			c.After.Images[svc] = img.Ref
		}
	}
	return out, nil
}

// NoImageError refuses a plan in which some instance needs features of a
// service that no single default image provides (vector and postgis:
// pgvector/pgvector has one, postgis/postgis the other).
type NoImageError struct {
	Refusals []ImageRefusal // sorted by address
}

// ImageRefusal is one instance and service without an image.
type ImageRefusal struct {
	Addr config.Address
	Err  *config.NoDefaultImageError
}

func (e *NoImageError) Error() string {
	parts := make([]string, len(e.Refusals))
	for i, r := range e.Refusals {
		parts[i] = fmt.Sprintf("%s: %v", r.Addr, r.Err)
	}
	return "no single default image provides what the plan needs and none is configured; nothing was created: " + strings.Join(parts, "; ")
}

// ImagesToStart lists every image the plan's creates and replaces start,
// one per service and reference: what a provider must Check before apply
// begins. A change built without images (ChooseImages not run) lists its
// services with an empty Ref, which means the provider's own choice.
func ImagesToStart(changes []*Change) []ImageUse {
	seen := map[ImageUse]bool{}
	var out []ImageUse
	for _, c := range changes {
		if (c.Action != Create && c.Action != CreateThenDelete) || c.After == nil {
			continue
		}
		for _, svc := range c.After.Features.Services() {
			u := ImageUse{Service: svc, Ref: c.After.Images[svc], Runtime: c.After.Runtime}
			if !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Runtime != out[j].Runtime {
			return out[i].Runtime < out[j].Runtime
		}
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Ref < out[j].Ref
	})
	return out
}
