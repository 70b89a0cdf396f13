package config

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultImage is a well-known public image sandboxer runs for a service
// when the provider block names no image for it, picked by the features a
// sandbox asks for.
type DefaultImage struct {
	Service string
	Ref     string
	// Extras are the features it adds to the service's bare image: the
	// ones that need an extension or module package of their own.
	Extras []string
}

// DefaultImages is the table of default images, in order of preference:
// the first that provides every requested feature is used. For postgres
// every image is built on the official postgres:17 and so has its contrib
// extensions (pg_trgm, hstore, citext, …); the others each add one
// packaged extension. No official image has two of them.
func DefaultImages() []DefaultImage {
	return []DefaultImage{
		{Service: "postgres", Ref: "postgres:17"},
		{Service: "postgres", Ref: "pgvector/pgvector:pg17", Extras: []string{"vector"}},
		// postgis and its friends (postgis_raster, postgis_topology, …;
		// of those the allowlist has postgis and the contrib fuzzystrmatch).
		{Service: "postgres", Ref: "postgis/postgis:17-3.5", Extras: []string{"postgis"}},
		{Service: "postgres", Ref: "timescale/timescaledb:latest-pg17", Extras: []string{"timescaledb"}},
		// search, JSON, bloom (and time series, not on the allowlist) are
		// built in and loaded by the image's entrypoint.
		{Service: "redis", Ref: "redis:8", Extras: []string{"bloom", "json", "search"}},
		// MySQL is served by MariaDB: the official image ships every
		// allowlisted plugin's library (mariadb-server's .debs).
		{Service: "mysql", Ref: "mariadb:11.8"},
		// valkey/valkey has no module; the bundle loads valkey-bloom,
		// valkey-json and valkey-search by itself.
		{Service: "valkey", Ref: "valkey/valkey:8"},
		{Service: "valkey", Ref: "valkey/valkey-bundle:8", Extras: []string{"bloom", "json", "search"}},
	}
}

// DefaultImagesOf is DefaultImages' rows for one service, in order.
func DefaultImagesOf(service string) []DefaultImage {
	var out []DefaultImage
	for _, d := range DefaultImages() {
		if d.Service == service {
			out = append(out, d)
		}
	}
	return out
}

// packagedFeatures are the features of service that only some default
// images provide: every Extra of its table rows.
func packagedFeatures(service string) []string {
	var out []string
	for _, d := range DefaultImages() {
		if d.Service == service {
			out = append(out, d.Extras...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// provides reports whether d provides feature f, given the packaged
// features of its service.
func (d DefaultImage) provides(f string, packaged []string) bool {
	return slices.Contains(d.Extras, f) || !slices.Contains(packaged, f)
}

// DefaultImageWith returns the default image that adds feature to the
// service's bare image (pgvector/pgvector:pg17 for vector); false for a
// feature every default image has, or none.
func DefaultImageWith(service, feature string) (string, bool) {
	for _, d := range DefaultImages() {
		if d.Service == service && slices.Contains(d.Extras, feature) {
			return d.Ref, true
		}
	}
	return "", false
}

// ImageRecipe says how to get one image with several packaged extensions,
// for the messages that refuse a set no default image covers: the local
// image images/build.sh makes has every one of them.
const ImageRecipe = `build one image that has them all ` +
	`(images/build.sh in sandboxer's source builds sandboxer.local/postgres:17 with pgvector, PostGIS and TimescaleDB ` +
	`from Debian packages; see images/README.md) and name it: provider "docker" { image "%s" { ref = "…" } }`

// NoDefaultImageError is returned by ImageFor when no image is configured
// for a service and no default image provides every requested feature.
type NoDefaultImageError struct {
	Service  string
	Features []string // what was asked, sorted
	// Candidates are the default images that provide some of it, with
	// what each lacks.
	Candidates []ImageCandidate
}

// ImageCandidate is a default image that covers part of a feature set.
type ImageCandidate struct {
	Ref   string
	Lacks []string
}

func (e *NoDefaultImageError) Error() string {
	var cands []string
	for _, c := range e.Candidates {
		cands = append(cands, fmt.Sprintf("%s lacks %s", c.Ref, quotedList(c.Lacks)))
	}
	return fmt.Sprintf("no single default %s image provides %s (%s); %s",
		e.Service, quotedList(e.Features), strings.Join(cands, ", "), fmt.Sprintf(ImageRecipe, e.Service))
}

func quotedList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}

// ImageFor returns the image a service runs with features: the one the
// provider block configures, whatever the features (a configured image
// always wins; the plan's capability check then says what it lacks), or
// else the first default image that provides every feature, or a
// *NoDefaultImageError naming the candidates. A nil Provider configures
// nothing.
func (p *Provider) ImageFor(service string, features []string) (Image, error) {
	if p != nil {
		if img, ok := p.Images[service]; ok && !img.Default && img.Ref != "" {
			return img, nil
		}
	}
	// An image provides a feature whatever generation is asked: which
	// one it has is checked once it is inspected (plan.Unprovidable).
	feats := FeatureNames(features)
	packaged := packagedFeatures(service)
	var cands []ImageCandidate
	for _, d := range DefaultImages() {
		if d.Service != service {
			continue
		}
		var lacks []string
		for _, f := range feats {
			if !d.provides(f, packaged) {
				lacks = append(lacks, f)
			}
		}
		if len(lacks) == 0 {
			return Image{Ref: d.Ref, Default: true}, nil
		}
		// A candidate brings at least one of the packaged features asked for.
		if slices.ContainsFunc(d.Extras, func(f string) bool { return slices.Contains(feats, f) }) {
			cands = append(cands, ImageCandidate{Ref: d.Ref, Lacks: lacks})
		}
	}
	if len(cands) == 0 {
		// A service without a default image runs the image of its own
		// name (defaultImageRef), which has to provide the rest.
		return Image{Ref: defaultImageRef(service), Default: true}, nil
	}
	return Image{}, &NoDefaultImageError{Service: service, Features: feats, Candidates: cands}
}

// ImageForRef is the image a runtime starts for a service: ref as a plan
// chose it, with the configured module paths when it is the configured
// image, or for an empty ref what ImageFor picks for features. A ref that
// is neither the configured image nor, when none is configured, one of the
// default images is refused: a saved plan names the image, and it must
// not be able to start any other. Every runtime asks this, so the rule is
// written once.
func (p *Provider) ImageForRef(service, ref string, features []string) (Image, error) {
	if ref == "" {
		return p.ImageFor(service, features)
	}
	if img, ok := p.Images[service]; ok && !img.Default {
		if img.Ref != ref {
			return Image{}, fmt.Errorf("image %q is not the one configured for service %s (%q); plan again", ref, service, img.Ref)
		}
		return img, nil
	}
	for _, d := range DefaultImages() {
		if d.Service == service && d.Ref == ref {
			return Image{Ref: ref, Default: true}, nil
		}
	}
	if img := p.Images[service]; img.Ref == ref {
		return img, nil
	}
	return Image{}, fmt.Errorf("image %q is no default image of service %s and none is configured; plan again", ref, service)
}
