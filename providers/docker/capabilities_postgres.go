package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"github.com/sandboxer/sandboxer/plan"
)

// postgresCapabilities lists the allowed extensions a postgres image
// ships, with their default versions, from the extension control files
// (SHAREDIR/extension/NAME.control, which is what pg_available_extensions
// reads too). The files are read from a created, never started container:
// no server start (initdb alone takes seconds) and nothing of the image
// runs. The same container tells the service user (serviceuser.go).
func (p *Provider) postgresCapabilities(ctx context.Context, ref string, ii image.InspectResponse) (imageFacts, error) {
	id, remove, err := p.createInspection(ctx, inspectSpec{Image: ref})
	if err != nil {
		return imageFacts{}, err
	}
	defer remove()
	owner, err := p.readOwner(ctx, id, "postgres", ii)
	if err != nil {
		return imageFacts{}, err
	}
	var versions map[string]string
	var tried []string
	for _, dir := range extensionDirs(imageEnv(ii, "PG_MAJOR")) {
		tried = append(tried, dir)
		rc, _, err := p.cli.CopyFromContainer(ctx, id, dir)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return imageFacts{}, p.engineErr("read "+dir+" from image "+ref, err)
		}
		var links map[string]string
		versions, links, err = readControlFiles(rc)
		rc.Close()
		if err != nil {
			return imageFacts{}, fmt.Errorf("read %s from image %s: %w", dir, ref, err)
		}
		for name, target := range links {
			if !slices.Contains(p.cat.Allowed("postgres"), name) {
				continue // only allowed extensions are reported; skip the reads
			}
			v, ok, err := p.followControlLink(ctx, id, dir, target)
			if err != nil {
				return imageFacts{}, err
			}
			if ok {
				versions[name] = v
			}
		}
		break
	}
	if versions == nil {
		return imageFacts{}, fmt.Errorf("no PostgreSQL extension directory in the image (looked in %s)", strings.Join(tried, ", "))
	}
	ic := plan.ImageCapabilities{Features: map[string]string{},
		Hint: `use a postgres image that ships it: provider "docker" { image "postgres" { ref = "…" } }`}
	for _, f := range p.cat.Allowed("postgres") {
		if v, ok := versions[f]; ok {
			ic.Features[f] = v
		}
	}
	return imageFacts{ImageCapabilities: ic, Owner: owner}, nil
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
func (p *Provider) followControlLink(ctx context.Context, id, dir, target string) (string, bool, error) {
	for range maxLinkHops {
		if !path.IsAbs(target) {
			target = path.Join(dir, target)
		}
		rc, _, err := p.cli.CopyFromContainer(ctx, id, target)
		if cerrdefs.IsNotFound(err) {
			return "", false, nil
		}
		if err != nil {
			return "", false, p.engineErr("read "+target, err)
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
