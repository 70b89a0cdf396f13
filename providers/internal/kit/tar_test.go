package kit

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWriteTar(t *testing.T) {
	local := filepath.Join(t.TempDir(), "dump")
	if err := os.WriteFile(local, []byte("from disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTar(&buf, "/tmp/in/", map[string]string{"b.dump": local}, map[string][]byte{"c.sql": []byte("select 1"), "a.sql": nil}); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	var names []string
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
		if want := int64(0o644); h.Typeflag == tar.TypeReg && h.Mode != want {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
	}
	if want := []string{"tmp/in/", "tmp/in/b.dump", "tmp/in/a.sql", "tmp/in/c.sql"}; !slices.Equal(names, want) {
		t.Errorf("entries %v, want %v", names, want)
	}
	if got["tmp/in/b.dump"] != "from disk" || got["tmp/in/c.sql"] != "select 1" {
		t.Errorf("contents %q", got)
	}
	if err := WriteTar(io.Discard, "d", map[string]string{"x": filepath.Join(t.TempDir(), "missing")}, nil); err == nil {
		t.Error("a missing local file was archived")
	}
}

func TestTailBuffer(t *testing.T) {
	var tb TailBuffer
	head := bytes.Repeat([]byte("h"), 5000)
	if n, err := tb.Write(head); n != len(head) || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	tb.Write([]byte("the end"))
	s := tb.String()
	if len(s) != 4096 || s[len(s)-7:] != "the end" {
		t.Errorf("kept %d bytes ending %q", len(s), s[max(0, len(s)-7):])
	}
}
