package config

import (
	"fmt"
	"slices"
	"strings"
)

// Feature is one engine feature a service may switch on.
type Feature struct {
	Name string
	// ExplicitOnly features are never implied; they are on the list only
	// because someone asked for them by name (timescaledb).
	ExplicitOnly bool
	// Note says why the feature needs care, for `validate --json` and docs.
	Note string
	// Generations are the API generations the feature comes in, which a
	// configuration may ask for as "name@generation" (generation.go);
	// empty for a feature with one API. Which one an image has is the
	// service's to detect from the module it loads.
	Generations []string `json:",omitempty"`
}

// ServiceSpec is one service the catalog knows and the features it allows.
type ServiceSpec struct {
	Name     string
	Features []Feature // sorted by name
}

// Catalog is the built-in allowlist: the security boundary that decides what
// configuration may switch on. HCL cannot extend it.
type Catalog struct {
	services []ServiceSpec // sorted by name
}

// DefaultCatalog returns the allowlist compiled into this build. PostgreSQL
// lists only extensions a non-superuser owner can use safely once an admin
// created them: no untrusted procedural languages, no server file or network
// access (adminpack, file_fdw, dblink, postgres_fdw, lo_import helpers).
func DefaultCatalog() *Catalog {
	pg := []Feature{
		{Name: "btree_gin"}, {Name: "btree_gist"}, {Name: "citext"}, {Name: "cube"},
		{Name: "earthdistance"}, {Name: "fuzzystrmatch"}, {Name: "hstore"},
		{Name: "intarray"}, {Name: "isn"}, {Name: "ltree"}, {Name: "pg_trgm"},
		{Name: "pgcrypto"}, {Name: "postgis"}, {Name: "seg"}, {Name: "tablefunc"},
		{Name: "timescaledb", ExplicitOnly: true, Note: "only when asked for explicitly; its default image is timescale/timescaledb:latest-pg17"},
		{Name: "tsm_system_rows"}, {Name: "tsm_system_time"}, {Name: "unaccent"},
		{Name: "uuid-ossp"}, {Name: "vector"},
	}
	// search comes in two APIs: RediSearch 1.x (FT.ADD, no ON HASH
	// PREFIX; Debian's redis-redisearch) and the Redis Search 2.x API
	// (indexes follow hashes by prefix: RediSearch 2.x, redis:8's built-in
	// search); services/redis.FeatureGeneration tells them apart by the
	// module's version.
	redis := []Feature{{Name: "bloom"}, {Name: "json"}, {Name: "search", Generations: []string{"1", "2"}}}
	// Valkey's modules (valkey-bloom, valkey-json, valkey-search: those
	// of valkey/valkey-bundle); services/valkey.Allowed is the same list.
	// valkey-search speaks only the 2.x API (services/valkey.FeatureGeneration).
	valkey := []Feature{{Name: "bloom"}, {Name: "json"}, {Name: "search", Generations: []string{"2"}}}
	// MySQL's plugins that give the handed-out user no way out
	// (services/mysql.Plugins says why each is in and the others out);
	// services/mysql.Allowed is the same list.
	mysql := []Feature{{Name: "archive"}, {Name: "blackhole"}, {Name: "mysql_json"}}
	return &Catalog{services: []ServiceSpec{
		{Name: "mysql", Features: mysql},
		{Name: "postgres", Features: pg},
		{Name: "redis", Features: redis},
		{Name: "valkey", Features: valkey},
	}}
}

// Services lists the known service names, sorted.
func (c *Catalog) Services() []string {
	out := make([]string, len(c.services))
	for i, s := range c.services {
		out[i] = s.Name
	}
	return out
}

// Service returns the spec of a known service.
func (c *Catalog) Service(name string) (ServiceSpec, bool) {
	for _, s := range c.services {
		if s.Name == name {
			return s, true
		}
	}
	return ServiceSpec{}, false
}

// Allowed lists the feature names allowed for a service, sorted.
func (c *Catalog) Allowed(service string) []string {
	spec, _ := c.Service(service)
	out := make([]string, len(spec.Features))
	for i, f := range spec.Features {
		out[i] = f.Name
	}
	return out
}

// CheckService returns an *UnknownServiceError for a service the catalog
// does not know.
func (c *Catalog) CheckService(service string) error {
	if _, ok := c.Service(service); !ok {
		return &UnknownServiceError{Service: service, Known: c.Services()}
	}
	return nil
}

// CheckFeature returns an *UnknownServiceError or a *FeatureNotAllowedError
// (a *GenerationNotAllowedError for "name@generation" whose name is
// allowed but not that generation). feature may name a generation.
func (c *Catalog) CheckFeature(service, feature string) error {
	spec, ok := c.Service(service)
	if !ok {
		return &UnknownServiceError{Service: service, Known: c.Services()}
	}
	name := FeatureName(feature)
	i := slices.IndexFunc(spec.Features, func(f Feature) bool { return f.Name == name })
	if i < 0 {
		return &FeatureNotAllowedError{Service: service, Feature: feature, Allowed: c.Allowed(service)}
	}
	if err := checkGeneration(spec.Features[i], service, feature); err != nil {
		return err
	}
	return nil
}

// UnknownServiceError reports a service name not in the catalog.
type UnknownServiceError struct {
	Service string
	Known   []string
}

func (e *UnknownServiceError) Error() string {
	return fmt.Sprintf("unknown service %s; known services: %s", quote(e.Service), strings.Join(e.Known, ", "))
}

// FeatureNotAllowedError reports a feature outside a service's allowlist.
type FeatureNotAllowedError struct {
	Service string
	Feature string
	Allowed []string
}

func (e *FeatureNotAllowedError) Error() string {
	return fmt.Sprintf("%s feature %s is not on the allowlist; allowed: %s",
		e.Service, quote(e.Feature), strings.Join(e.Allowed, ", "))
}

// NewCatalog returns a catalog of specs (sorted by name, each one's
// features too), for a program that is handed its caller's catalog: the
// kubernetes runtime's own process (internal/plugin) is given the one the
// caller was configured with.
func NewCatalog(specs []ServiceSpec) *Catalog {
	out := make([]ServiceSpec, len(specs))
	for i, s := range specs {
		out[i] = ServiceSpec{Name: s.Name, Features: slices.Clone(s.Features)}
		slices.SortFunc(out[i].Features, func(a, b Feature) int { return strings.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(out, func(a, b ServiceSpec) int { return strings.Compare(a.Name, b.Name) })
	return &Catalog{services: out}
}

// Specs returns the catalog's service specs, sorted (NewCatalog's input).
func (c *Catalog) Specs() []ServiceSpec {
	out := make([]ServiceSpec, len(c.services))
	for i, s := range c.services {
		out[i] = ServiceSpec{Name: s.Name, Features: slices.Clone(s.Features)}
	}
	return out
}
