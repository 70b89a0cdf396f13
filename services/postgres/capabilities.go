package postgres

import (
	"archive/tar"
	"bufio"
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
// extensions the image ships (Extensions, for the image's PG_MAJOR).
func (Service) ImageFeatures(ctx context.Context, files ImageFiles, env func(string) string, allowed []string) (map[string]string, error) {
	return Extensions(ctx, files, env("PG_MAJOR"), func(name string) bool { return slices.Contains(allowed, name) })
}

// FeaturesHint says how to get a missing extension.
func (Service) FeaturesHint(runtime string) string {
	return `use a postgres image that ships it: provider "` + runtime + `" { image "postgres" { ref = "…" } }`
}

// Extensions lists the extensions an image ships that wanted accepts,
// name → default version, from the extension control files
// (SHAREDIR/extension/NAME.control, which is what pg_available_extensions
// reads too): no server start, so no initdb. pgMajor is the image's
// PG_MAJOR ("" when unset).
func Extensions(ctx context.Context, files ImageFiles, pgMajor string, wanted func(name string) bool) (map[string]string, error) {
	var tried []string
	for _, dir := range extensionDirs(pgMajor) {
		tried = append(tried, dir)
		rc, err := files.Read(ctx, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		versions, links, err := readControlFiles(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", dir, err)
		}
		for name, target := range links {
			if !wanted(name) {
				continue // only wanted extensions are reported; skip the reads
			}
			v, ok, err := followControlLink(ctx, files, dir, target)
			if err != nil {
				return nil, err
			}
			if ok {
				versions[name] = v
			}
		}
		out := map[string]string{}
		for name, v := range versions {
			if wanted(name) {
				out[name] = v
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no PostgreSQL extension directory in the image (looked in %s)", strings.Join(tried, ", "))
}

// extensionDirs are where PostgreSQL images keep extension control files:
// Debian packages (the official Debian-based images, the local one) under
// /usr/share/postgresql/MAJOR, source builds (the official Alpine images)
// under /usr/local/share/postgresql.
func extensionDirs(major string) []string {
	var out []string
	if major != "" && !strings.ContainsAny(major, "/.") {
		out = append(out, path.Join("/usr/share/postgresql", major, "extension"))
	}
	return append(out, "/usr/local/share/postgresql/extension", "/usr/share/postgresql/extension",
		"/usr/local/pgsql/share/extension")
}

// readControlFiles reads a tar of an extension directory and returns each
// extension's default_version, and the control files that are symbolic
// links, name → link target. Secondary control files (NAME--VERSION.control)
// only amend a version and name no extension of their own.
func readControlFiles(r io.Reader) (map[string]string, map[string]string, error) {
	out := map[string]string{}
	links := map[string]string{} // name → target file in the directory
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		name, ok := strings.CutSuffix(path.Base(h.Name), ".control")
		if !ok || strings.Contains(name, "--") || path.Dir(h.Name) != "extension" {
			continue
		}
		switch h.Typeflag {
		case tar.TypeReg:
			out[name] = controlVersion(io.LimitReader(tr, 64<<10))
		case tar.TypeSymlink:
			links[name] = h.Linkname
		}
	}
	return out, links, nil
}

// maxLinkHops bounds following a control file's symbolic links.
const maxLinkHops = 8

// followControlLink reads the control file a symbolic link in dir points
// to, through further links (Debian: postgis.control →
// /etc/alternatives/… → postgis-3.control), and returns its version; false
// when it leads nowhere, as the server could not read it either.
func followControlLink(ctx context.Context, files ImageFiles, dir, target string) (string, bool, error) {
	for range maxLinkHops {
		if !path.IsAbs(target) {
			target = path.Join(dir, target)
		}
		rc, err := files.Read(ctx, target)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		tr := tar.NewReader(rc)
		h, err := tr.Next()
		if err != nil {
			rc.Close()
			return "", false, nil
		}
		switch h.Typeflag {
		case tar.TypeReg:
			v := controlVersion(io.LimitReader(tr, 64<<10))
			rc.Close()
			return v, true, nil
		case tar.TypeSymlink:
			dir, target = path.Dir(target), h.Linkname
			rc.Close()
		default:
			rc.Close()
			return "", false, nil
		}
	}
	return "", false, nil
}

// controlVersion reads default_version from a control file
// ("default_version = '0.8.0'"); "" when it has none.
func controlVersion(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.TrimSpace(k) != "default_version" {
			continue
		}
		return strings.Trim(strings.TrimSpace(v), `'"`)
	}
	return ""
}
