package valkey

import (
	"context"
	"slices"

	goredis "github.com/redis/go-redis/v9"
	"github.com/sandboxer/sandboxer/services/redis"
)

// Module is one allowlisted Valkey module: the feature name in
// configurations and the names the module reports in MODULE LIST /
// INFO modules.
type Module struct {
	Feature string
	Names   []string
	What    string
}

// Modules is the allowlist: the modules of the valkey/valkey-bundle
// image (valkey-search, valkey-json, valkey-bloom), which add data types
// and commands on the user's own keys. Their administrative commands
// (FT.CONFIG and the like, flagged admin, and "_"-internal ones) are
// denied to the handed-out user after start (RestrictModuleCommands).
// No other module may be loaded: MODULE LOAD is off for everyone, so only
// the runtime's --loadmodule arguments load one.
//
// Debian (trixie) packages none of them, so the local image offers none;
// a sandbox asking for one needs an image that has it (valkey-bundle),
// configured with the module paths, and is refused otherwise as for any
// missing feature.
func Modules() []Module {
	return []Module{
		{"bloom", []string{"bf"}, "valkey-bloom: Bloom filters (BF.*)"},
		{"json", []string{"json"}, "valkey-json: the JSON type (JSON.*)"},
		{"search", []string{"search"}, "valkey-search: vector and full-text indexes (FT.*), Redis Search 2.x's API (API generation 2)"},
	}
}

// Allowed is the allowlist's feature names, sorted.
func Allowed() []string {
	var out []string
	for _, m := range Modules() {
		out = append(out, m.Feature)
	}
	slices.Sort(out)
	return out
}

// ModuleNames returns the names a feature's module reports.
func ModuleNames(feature string) []string {
	for _, m := range Modules() {
		if m.Feature == feature {
			return m.Names
		}
	}
	return nil
}

// LoadModuleArgs are the --loadmodule arguments for the requested
// features (see redis.LoadModuleArgs: never one the image loads itself).
func LoadModuleArgs(feats []string, modules map[string]string, selfLoaded []string) []string {
	return redis.LoadModuleArgs(feats, modules, selfLoaded)
}

// LoadedFeatures returns the allowlisted features whose module the
// server has loaded, feature → version, from INFO modules.
func LoadedFeatures(ctx context.Context, admin *goredis.Client) (map[string]string, error) {
	loaded, err := redis.ModuleVersions(ctx, admin)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range Modules() {
		for _, n := range m.Names {
			if v, ok := loaded[n]; ok {
				out[m.Feature] = v
			}
		}
	}
	return out, nil
}

// RestrictModuleCommands denies user the loaded modules' administrative
// and debug commands (redis.RestrictModuleCommands).
func RestrictModuleCommands(ctx context.Context, admin *goredis.Client, user string, modules []string) ([]string, error) {
	return redis.RestrictModuleCommands(ctx, admin, user, modules)
}

// FeatureGeneration is the API generation of feature's module
// (contract.GenerationDetector): valkey-search, the one module Valkey's
// search feature loads (reported as "search"), speaks the Redis Search
// 2.x API (FT.CREATE … ON HASH PREFIX) from its first release on, 1.0
// included, so its version does not change the answer.
func (Service) FeatureGeneration(feature, version string) string {
	if feature == "search" && version != "" {
		return "2"
	}
	return ""
}
