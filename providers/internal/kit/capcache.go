package kit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Inspection is what a runtime found by inspecting an image for a
// service (its own type: what plan compares and what it needs to start
// the image).
type Inspection interface {
	// Inspected reports whether the value is a whole inspection: a cache
	// file that decodes to less is ignored.
	Inspected() bool
}

// FactsCache remembers what each image provides, under a key that names
// its content exactly (the runtime's: image ID, service, module paths,
// allowlist), so entries never go stale. Memory serves one process (a
// long-running serve, a plan followed by its apply); files in Dir, when
// set, serve later runs, so only the first plan on a machine pays for the
// inspection. The zero value keeps inspections in memory only.
type FactsCache[F Inspection] struct {
	// Dir is where inspections are kept across runs ("": memory only).
	// Set it before the first Get.
	Dir string
	mu  sync.Mutex
	mem map[string]F
}

// Get looks in memory, then on disk. A cache file that cannot be read is
// ignored: the image is inspected again.
func (c *FactsCache[F]) Get(key string) (F, bool) {
	c.mu.Lock()
	f, ok := c.mem[key]
	c.mu.Unlock()
	if ok || c.Dir == "" {
		return f, ok
	}
	var zero F
	b, err := os.ReadFile(filepath.Join(c.Dir, key+".json"))
	if err != nil || json.Unmarshal(b, &f) != nil || !f.Inspected() {
		return zero, false
	}
	c.remember(key, f)
	return f, true
}

// Put remembers an inspection. Writing the cache file is best effort:
// without it the next run inspects again, which is slower but gives the
// same answer. f should name no image reference: the same image may go
// by other names.
func (c *FactsCache[F]) Put(key string, f F) {
	c.remember(key, f)
	if c.Dir == "" {
		return
	}
	b, err := json.Marshal(f)
	if err != nil || os.MkdirAll(c.Dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(c.Dir, key+".json")) != nil {
		os.Remove(tmp.Name())
	}
}

func (c *FactsCache[F]) remember(key string, f F) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		c.mem = map[string]F{}
	}
	c.mem[key] = f
}

// CapabilityKey names one inspection in a FactsCache: the runtime (""
// or a short prefix, so runtimes sharing a cache directory never share
// a key), the runtime's format version of what it finds, the service,
// the image's ID, the module paths configured for it and the allowlist
// it was filtered by. The prefix and the service lead the file name, for
// people looking at the cache.
func CapabilityKey(runtime string, format int, service, imageID string, modules map[string]string, allowed []string) string {
	h := sha256.New()
	prefix := ""
	if runtime != "" {
		fmt.Fprintf(h, "%s\x00", runtime)
		prefix = runtime + "-"
	}
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00", format, service, imageID)
	for _, f := range slices.Sorted(maps.Keys(modules)) {
		fmt.Fprintf(h, "%s=%s\x00", f, modules[f])
	}
	for _, f := range allowed {
		fmt.Fprintf(h, "%s\x00", f)
	}
	return prefix + service + "-" + hex.EncodeToString(h.Sum(nil))[:32]
}
