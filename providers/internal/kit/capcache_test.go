package kit

import (
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
