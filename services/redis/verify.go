package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

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
	return VerifyModules(ctx, c, tlsConf, Name, ModuleNames, imageRef, runtime, feats, allowed, seen)
}

// VerifyModules is Verify for a server of the Redis family (service, its
// feature → module names): Valkey's modules report other names.
func VerifyModules(ctx context.Context, c state.Credentials, tlsConf *tls.Config, service string, names func(string) []string, imageRef, runtime string, feats, allowed []string, seen map[string]string) (map[string]string, error) {
	version := func(loaded map[string]string, feature string) (string, bool) {
		for _, n := range names(feature) {
			if v, ok := loaded[n]; ok {
				return v, true
			}
		}
		return "", false
	}
	admin := Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, tlsConf)
	defer admin.Close()
	loadedVersions, err := moduleVersionsPatient(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("list loaded modules as admin: %w", err)
	}
	loaded := slices.Sorted(maps.Keys(loadedVersions))
	available := maps.Clone(seen)
	if available == nil {
		available = map[string]string{}
	}
	for _, f := range allowed {
		if v, ok := version(loadedVersions, f); ok {
			available[f] = v
		}
	}
	for _, f := range feats {
		if _, ok := version(loadedVersions, f); !ok {
			return nil, fmt.Errorf("%s image %q does not provide feature %q: module %s is not loaded (loaded modules: %s); "+
				"set provider %q { image %q { modules = { %s = \"/path/to/module.so\" } } } or use an image that bundles it",
				service, imageRef, f, strings.Join(names(f), "/"), listOrNone(loaded), runtime, service, f)
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

// moduleVersionsPatient is ModuleVersions for a server that has only just
// answered its readiness probe: on a loaded host its first answers can
// take longer than the client's 2 s read timeout (a pool's burst of
// creates failed on exactly that), so a timeout is tried again, three
// attempts in all. Any other error is final at once.
func moduleVersionsPatient(ctx context.Context, admin *redis.Client) (map[string]string, error) {
	for attempt := 1; ; attempt++ {
		v, err := ModuleVersions(ctx, admin)
		var ne net.Error
		if err == nil || attempt == 3 || ctx.Err() != nil || !errors.As(err, &ne) || !ne.Timeout() {
			return v, err
		}
	}
}
