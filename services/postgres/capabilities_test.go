package postgres

import (
	"archive/tar"
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadControlFiles(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	add(&tar.Header{Name: "extension/", Typeflag: tar.TypeDir}, "")
	add(&tar.Header{Name: "extension/vector.control"}, "comment = 'vector'\ndefault_version = '0.8.0'\nmodule_pathname = '$libdir/vector'\n")
	add(&tar.Header{Name: "extension/vector--0.7.0--0.8.0.sql"}, "SELECT 1;")
	add(&tar.Header{Name: "extension/postgis-3.control"}, "default_version='3.5.2'\n")
	add(&tar.Header{Name: "extension/bare.control"}, "comment = 'no version'\n")
	add(&tar.Header{Name: "extension/timescaledb--2.0.control"}, "requires = 'x'\n") // secondary
	add(&tar.Header{Name: "extension/postgis.control", Typeflag: tar.TypeSymlink, Linkname: "/etc/alternatives/postgis.control"}, "")
	add(&tar.Header{Name: "extension/sub/other.control"}, "default_version = '1'\n") // not in the directory itself
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	versions, links, err := readControlFiles(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"vector": "0.8.0", "postgis-3": "3.5.2", "bare": ""}, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"postgis": "/etc/alternatives/postgis.control"}, links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
	if _, _, err := readControlFiles(bytes.NewReader([]byte("not a tar at all, but long enough to look at the header................"))); err == nil {
		t.Error("garbage: want an error")
	}
}

func TestPreloadArgs(t *testing.T) {
	if got := PreloadArgs([]string{"vector"}); got != nil {
		t.Errorf("vector: %v", got)
	}
	got := PreloadArgs([]string{"pg_trgm", "timescaledb"})
	if diff := cmp.Diff([]string{"-c", "shared_preload_libraries=timescaledb", "-c", "timescaledb.telemetry_level=off"}, got); diff != "" {
		t.Errorf("timescaledb (-want +got):\n%s", diff)
	}
}
