package cli

import (
	"os"
	"path/filepath"
)

// cacheDir is where the provider caches what each image provides, by image
// ID (see providers/docker/capabilities.go): SANDBOXER_CACHE_DIR, else
// sandboxer under the user's cache directory ($XDG_CACHE_HOME or
// ~/.cache). "" (no home) keeps the cache in memory for the run only.
func cacheDir(f *Factory) string {
	if d := f.Getenv("SANDBOXER_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "sandboxer")
}
