package mysql

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/services/contract"
)

// ImageFiles reads an image's files without running anything of it: the
// runtime's way in (on Docker, docker cp from a created container).
type ImageFiles = contract.ImageFiles

// ImageFeatures is contract.FileInspector's question: the allowed
// plugins whose library the image ships (Features). The files say no
// version; the running server's is reported after start (Verify).
func (Service) ImageFeatures(ctx context.Context, files ImageFiles, _ func(string) string, allowed []string) (map[string]string, error) {
	feats, err := Features(ctx, files)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range feats {
		if slices.Contains(allowed, f) {
			out[f] = ""
		}
	}
	return out, nil
}

// FeaturesHint says how to get a missing plugin.
func (Service) FeaturesHint(runtime string) string {
	return `use a mysql (MariaDB) image that ships its plugin library: provider "` + runtime + `" { image "mysql" { ref = "…" } }`
}

// PluginDirs are where images keep server plugins: Debian's packages
// (the local image and the official mariadb image, which installs
// MariaDB's own .debs) under /usr/lib/mysql/plugin, Oracle's mysql image
// (RPMs) under /usr/lib64/mysql/plugin, source builds under
// /usr/local/mysql/lib/plugin.
func PluginDirs() []string {
	return []string{"/usr/lib/mysql/plugin", "/usr/lib64/mysql/plugin", "/usr/local/mysql/lib/plugin"}
}

// Features lists the allowlisted features whose plugin library the image
// ships, sorted, read from the first plugin directory it has: no server
// start, so no initialisation. A library that is a symbolic link counts,
// as the server would follow it.
func Features(ctx context.Context, files ImageFiles) ([]string, error) {
	for _, dir := range PluginDirs() {
		rc, err := files.Read(ctx, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		libs, err := readPluginDir(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", dir, err)
		}
		var out []string
		for _, p := range Plugins() {
			if slices.Contains(libs, p.Soname) {
				out = append(out, p.Feature)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	return nil, fmt.Errorf("no MySQL plugin directory in the image (looked in %s)", strings.Join(PluginDirs(), ", "))
}

// readPluginDir returns the library names (without .so) directly in a
// tar of a plugin directory.
func readPluginDir(r io.Reader) ([]string, error) {
	var out []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		name, ok := strings.CutSuffix(path.Base(h.Name), ".so")
		if !ok || path.Dir(path.Clean(h.Name)) != "plugin" {
			continue
		}
		if h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeSymlink {
			out = append(out, name)
		}
	}
}
