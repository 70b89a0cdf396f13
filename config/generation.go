package config

import (
	"fmt"
	"slices"
	"strings"
)

// A feature may come in API generations: the same name for modules whose
// commands differ (RediSearch 1.x and the Redis Search 2.x API that
// redis:8 and valkey-search speak). A configuration asks for one with
// "name@generation" ("search@2"); the plain name asks for any generation.
// The generation an image has is detected from its module when the image
// is inspected (the service's rule over the version it reports), never
// from the image's name, and a request for a generation the image lacks
// is refused like a missing feature (plan.Unprovidable). The allowlist
// says which generations a feature has (Feature.Generations); a feature
// without any takes no "@".

// GenerationSep separates a feature's name from its generation.
const GenerationSep = "@"

// ParseFeature splits a requested feature into its name and the API
// generation asked for ("" for any): "search@2" → "search", "2".
func ParseFeature(f string) (name, generation string) {
	name, generation, _ = strings.Cut(f, GenerationSep)
	return name, generation
}

// FeatureName is f without its generation.
func FeatureName(f string) string {
	name, _ := ParseFeature(f)
	return name
}

// FeatureNames is features without their generations, sorted and unique:
// what an image must load or create.
func FeatureNames(features []string) []string {
	out := make([]string, len(features))
	for i, f := range features {
		out[i] = FeatureName(f)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Names is f with every feature's generation dropped: the modules and
// extensions a runtime loads or creates (the generation is checked
// against the images before, in plan.Unprovidable).
func (f FeatureSet) Names() FeatureSet {
	out := make(FeatureSet, len(f))
	for svc, feats := range f {
		out[svc] = FeatureNames(feats)
		if out[svc] == nil {
			out[svc] = []string{}
		}
	}
	return out
}

// covers reports whether a provisioned feature have satisfies the
// requested want: the same name, and the same generation when want names
// one. A plain provisioned "search" does not cover "search@2": what it
// got was not checked for a generation.
func covers(have, want string) bool {
	if have == want {
		return true
	}
	hn, hg := ParseFeature(have)
	wn, wg := ParseFeature(want)
	return hn == wn && (wg == "" || wg == hg)
}

// GenerationNotAllowedError reports a generation the allowlist does not
// have for a feature ("search@7"), or a generation asked of a feature
// that has none ("json@2"). It is a *FeatureNotAllowedError too (As).
type GenerationNotAllowedError struct {
	Service     string
	Feature     string // as written, "search@7"
	Generations []string
}

func (e *GenerationNotAllowedError) Error() string {
	name, gen := ParseFeature(e.Feature)
	if len(e.Generations) == 0 {
		return fmt.Sprintf("%s feature %s has no API generations to choose from; write %s without %s%s",
			e.Service, quote(name), quote(name), GenerationSep, gen)
	}
	forms := make([]string, len(e.Generations))
	for i, g := range e.Generations {
		forms[i] = name + GenerationSep + g
	}
	return fmt.Sprintf("%s feature %s has no API generation %s; allowed: %s (any generation), %s",
		e.Service, quote(name), quote(gen), name, strings.Join(forms, ", "))
}

// checkGeneration checks the generation of a requested feature f
// (already known to be on the allowlist by name) against spec.
func checkGeneration(spec Feature, service, f string) error {
	_, gen := ParseFeature(f)
	if !strings.Contains(f, GenerationSep) {
		return nil
	}
	if gen != "" && slices.Contains(spec.Generations, gen) {
		return nil
	}
	return &GenerationNotAllowedError{Service: service, Feature: f, Generations: slices.Clone(spec.Generations)}
}

// Generations lists the API generations the allowlist has for a
// service's feature (empty for a feature without generations).
func (c *Catalog) Generations(service, feature string) []string {
	spec, _ := c.Service(service)
	for _, f := range spec.Features {
		if f.Name == FeatureName(feature) {
			return slices.Clone(f.Generations)
		}
	}
	return nil
}
