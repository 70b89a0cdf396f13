package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ModuleNames returns the names a feature's module reports in INFO
// modules / MODULE LIST (older RediSearch builds report "ft").
func ModuleNames(feature string) []string {
	switch feature {
	case "search":
		return []string{"search", "ft"}
	case "json":
		return []string{"ReJSON"}
	case "bloom":
		return []string{"bf"}
	}
	return nil
}

// LoadModuleArgs are the --loadmodule arguments for the requested
// features: one per feature with a configured module path, except those
// whose module the image loads by itself (selfLoaded, seen by the image's
// inspection: redis:8's entrypoint loads every module it ships). Loading
// a module twice aborts start-up, whatever the paths, so a configured
// path for such a feature is not used. A feature without a path is
// expected to be built in.
func LoadModuleArgs(feats []string, modules map[string]string, selfLoaded []string) []string {
	var args []string
	for _, f := range feats {
		if path := modules[f]; path != "" && !slices.Contains(selfLoaded, f) {
			args = append(args, "--loadmodule", path)
		}
	}
	return args
}

// ModuleVersions lists loaded modules, name → version, from INFO
// modules.
func ModuleVersions(ctx context.Context, admin *redis.Client) (map[string]string, error) {
	info, err := admin.Info(ctx, "modules").Result()
	if err != nil {
		return nil, err
	}
	return parseInfoModuleVersions(info), nil
}

// parseInfoModuleVersions reads lines like
// "module:name=search,ver=20606,api=1,…" into name → "2.6.6". Modules
// encode their version as major*10000 + minor*100 + patch.
func parseInfoModuleVersions(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module:")
		if !ok {
			continue
		}
		var name, ver string
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "name="); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(kv, "ver="); ok {
				ver = moduleVersionString(v)
			}
		}
		if name != "" {
			out[name] = ver
		}
	}
	return out
}

func moduleVersionString(v string) string {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return v
	}
	return fmt.Sprintf("%d.%d.%d", n/10000, n/100%100, n%100)
}

// ModuleVersion returns the version of feature's module among loaded.
func ModuleVersion(loaded map[string]string, feature string) (string, bool) {
	for _, n := range ModuleNames(feature) {
		if v, ok := loaded[n]; ok {
			return v, true
		}
	}
	return "", false
}
