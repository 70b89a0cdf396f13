package kit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

type facts struct {
	Features map[string]string `json:"features"`
}

func (f facts) Inspected() bool { return f.Features != nil }

func TestFactsCache(t *testing.T) {
	dir := t.TempDir()
	c := &FactsCache[facts]{Dir: dir}
	if _, ok := c.Get("k"); ok {
		t.Fatal("an empty cache found k")
	}
	c.Put("k", facts{Features: map[string]string{"vector": "0.8"}})
	if f, ok := c.Get("k"); !ok || f.Features["vector"] != "0.8" {
		t.Fatalf("Get after Put: %v %v", f, ok)
	}
	// A later run (another cache on the same directory) finds it on disk.
	later := &FactsCache[facts]{Dir: dir}
	if f, ok := later.Get("k"); !ok || f.Features["vector"] != "0.8" {
		t.Fatalf("Get from disk: %v %v", f, ok)
	}
	// A file that decodes to less than an inspection is ignored.
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "garbled.json"), []byte(`{"feat`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bad", "garbled"} {
		if _, ok := later.Get(k); ok {
			t.Errorf("%s.json was taken for an inspection", k)
		}
	}
	// Memory only: nothing is written.
	mem := &FactsCache[facts]{}
	mem.Put("m", facts{Features: map[string]string{}})
	if _, ok := mem.Get("m"); !ok {
		t.Error("memory cache lost m")
	}
	if _, err := os.Stat(filepath.Join(dir, "m.json")); !os.IsNotExist(err) {
		t.Errorf("a memory-only cache wrote a file: %v", err)
	}
}

// The keys are those the runtimes wrote before the kit (their cache
// files stay valid), and every input changes them.
func TestCapabilityKey(t *testing.T) {
	old := func(hashPrefix, namePrefix string) string {
		h := sha256.New()
		fmt.Fprintf(h, "%s%d\x00%s\x00%s\x00", hashPrefix, 2, "redis", "sha256:ab")
		fmt.Fprintf(h, "%s=%s\x00", "json", "/m/json.so")
		fmt.Fprintf(h, "%s=%s\x00", "search", "/m/s.so")
		fmt.Fprintf(h, "%s\x00", "bloom")
		return namePrefix + "redis-" + hex.EncodeToString(h.Sum(nil))[:32]
	}
	mods := map[string]string{"search": "/m/s.so", "json": "/m/json.so"}
	if got, want := CapabilityKey("", 2, "redis", "sha256:ab", mods, []string{"bloom"}), old("", ""); got != want {
		t.Errorf("docker key %s, want %s", got, want)
	}
	if got, want := CapabilityKey("k8s", 2, "redis", "sha256:ab", mods, []string{"bloom"}), old("k8s\x00", "k8s-"); got != want {
		t.Errorf("kubernetes key %s, want %s", got, want)
	}
	base := CapabilityKey("", 2, "redis", "sha256:ab", mods, []string{"bloom"})
	for name, k := range map[string]string{
		"format":  CapabilityKey("", 3, "redis", "sha256:ab", mods, []string{"bloom"}),
		"image":   CapabilityKey("", 2, "redis", "sha256:cd", mods, []string{"bloom"}),
		"modules": CapabilityKey("", 2, "redis", "sha256:ab", map[string]string{"json": "/m/json.so"}, []string{"bloom"}),
		"allowed": CapabilityKey("", 2, "redis", "sha256:ab", mods, []string{"bloom", "json"}),
	} {
		if k == base {
			t.Errorf("another %s gives the same key", name)
		}
	}
}
