package kit

import (
	"archive/tar"
	"bytes"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// WriteTar writes dir (mode 0755) with the files (0644) as a tar stream
// to be extracted at "/" (docker cp, tar -x in a pod): files maps names
// to local paths, inline names to contents, each written in name order.
func WriteTar(w io.Writer, dir string, files map[string]string, inline map[string][]byte) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	d := strings.Trim(dir, "/") + "/"
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: now}); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, err := os.Open(files[name])
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: d + name, Mode: 0o644, Size: st.Size(), ModTime: now})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inline)) {
		b := inline[name]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: d + name, Mode: 0o644, Size: int64(len(b)), ModTime: now}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, bytes.NewReader(b)); err != nil {
			return err
		}
	}
	return tw.Close()
}
