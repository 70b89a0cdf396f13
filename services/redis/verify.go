package redis

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/state"
)

// Verify checks a started server once it answers, as its admin user:
// every requested feature's module is loaded, and the app user is denied
// the modules' administrative commands. It returns the features the
// instance can offer, name → version: what the server loaded and what an
// earlier inspection of the image saw load (seen: a request for one is a
// replace that works). runtime names the provider block for the hint
// ("docker", "kubernetes").
func Verify(ctx context.Context, c state.Credentials, tlsConf *tls.Config, imageRef, runtime string, feats, allowed []string, seen map[string]string) (map[string]string, error) {
	admin := Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, tlsConf)
	defer admin.Close()
	loadedVersions, err := ModuleVersions(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("list loaded modules as admin: %w", err)
	}
	loaded := slices.Sorted(maps.Keys(loadedVersions))
	available := maps.Clone(seen)
	if available == nil {
		available = map[string]string{}
	}
	for _, f := range allowed {
		if v, ok := ModuleVersion(loadedVersions, f); ok {
			available[f] = v
		}
	}
	for _, f := range feats {
		if _, ok := ModuleVersion(loadedVersions, f); !ok {
			return nil, fmt.Errorf("redis image %q does not provide feature %q: module %s is not loaded (loaded modules: %s); "+
				"set provider %q { image \"redis\" { modules = { %s = \"/path/to/module.so\" } } } or use an image that bundles it",
				imageRef, f, strings.Join(ModuleNames(f), "/"), listOrNone(loaded), runtime, f)
		}
	}
	if _, err := RestrictModuleCommands(ctx, admin, c.User, loaded); err != nil {
		return nil, err
	}
	return available, nil
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
