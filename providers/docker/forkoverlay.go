package docker

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/shellquote"
	"github.com/sandboxer/sandboxer/services"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
)

// Copies on an overlay: the cheapest copy volume storage allows when the
// engine's local volume driver can mount overlayfs (probed once per
// provider, overlayWorks). The stage becomes a base volume: renamed
// into it from the source's volume by a helper that binds the engine
// host's directory holding both (no byte moves), or copied once where
// the engine refuses the bind; each copy's data volume is then an
// overlay of that base (its lower layer, shared and never written) and
// an upper directory of its own, in a volume of its own. A copy costs a
// mount, not a copy of the bytes: N copies of a gigabyte write none, and
// what a copy writes goes to its own upper layer (a changed file is
// copied up whole, as in a container's own layer). apply.Forked.Methods
// says "…+overlay".
//
// Lifetimes, all kept by labels so a killed process leaves nothing reap
// does not remove:
//   - a copy's upper volume carries the copy's instance labels (removed
//     with it by Delete's and a failed create's sweep) and LabelForkUpper,
//     its base's name;
//   - the base carries LabelForkBase and the lineage, no address: like a
//     lineage's shared network, ListManaged lists it as an orphan only
//     once no upper volume names it, and DeleteManaged removes it when it
//     removes the last upper that did. Uppers are made before their base,
//     and none after, so "no upper names it" is final.
//
// What goes on it, with volume storage: PostgreSQL's data directory when
// one volume of the image holds it (the images' layout), the stage on
// the source's volume; and the captured file of every service
// that starts from one (services.Forker.ForkArgs: Redis's and Valkey's
// RDB), streamed once out of the source's container (it may lie on a
// tmpfs) and mounted at forkDir. Anything else, tmpfs storage, or an
// engine that cannot mount overlayfs, fills each copy as before
// (forkfill.go).
//
// A fork's helper containers (the probe, the base's fill) carry one
// copy's labels but may mount every copy's volumes: removeVolume removes
// such a helper a killed process left before the volume it holds.
const (
	LabelForkBase  = "dev.sandboxer.fork-base"
	LabelForkUpper = "dev.sandboxer.fork-upper"
	fillOverlay    = "overlay"
)

// forkOverlay is a fork's base, ready for its copies to mount. Each
// service on it has a lower directory in the base (l-SERVICE) and, in
// every copy's upper volume, an upper and a work directory (u-SERVICE,
// w-SERVICE).
type forkOverlay struct {
	base    string // the base volume
	baseDir string // its directory on the engine's host
	// targets: service → where a copy's container mounts its overlay:
	// PostgreSQL's data volume, or forkDir for a service that starts from
	// a captured file (services.Forker.ForkArgs: an RDB file).
	targets map[string]string
	// uppers: copy address → its upper volume's directory on the engine's
	// host.
	uppers map[string]string
}

// overlayProbe is what the provider learnt of its engine's overlayfs,
// and whether a helper may bind the directory that holds the volumes
// (move: the stage is renamed into the base, not copied).
type overlayProbe struct {
	mu    sync.Mutex
	known bool
	ok    bool
	move  bool
	why   string
}

// volumesBind is where a helper that moves the stage mounts the engine
// host's directory holding the volumes (volumesRoot).
const volumesBind = "/sbx-volumes"

// volumesRoot is the deepest directory of the engine's host that holds
// every one of dirs (volumes' mount points), or "" when it is the root
// or a path is not absolute: a helper binds it to rename within it.
func volumesRoot(dirs ...string) string {
	root := ""
	for i, d := range dirs {
		if !path.IsAbs(d) {
			return ""
		}
		d = path.Clean(d)
		if i == 0 {
			root = d
			continue
		}
		for root != "/" && d != root && !strings.HasPrefix(d, root+"/") {
			root = path.Dir(root)
		}
	}
	if root == "/" {
		return ""
	}
	return root
}

// viaBind is host path p inside a helper that binds root at volumesBind.
func viaBind(root, p string) string {
	return path.Join(volumesBind, strings.TrimPrefix(path.Clean(p), root))
}

// mount is svc's overlay in the copy at address, when svc is on it: an
// anonymous volume of the local driver that mounts the base's lower
// directory under the copy's own upper one.
func (ov *forkOverlay) mount(svc, address string, labels map[string]string) (mount.Mount, bool) {
	if ov == nil {
		return mount.Mount{}, false
	}
	target, ok := ov.targets[svc]
	if !ok {
		return mount.Mount{}, false
	}
	up := ov.uppers[address]
	return mount.Mount{
		Type:   mount.TypeVolume,
		Target: target,
		VolumeOptions: &mount.VolumeOptions{Labels: labels, DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
			"type":   "overlay",
			"device": "overlay",
			"o": fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s",
				path.Join(ov.baseDir, "l-"+svc), path.Join(up, "u-"+svc), path.Join(up, "w-"+svc)),
		}}},
	}, true
}

// prepareOverlay makes the fork's base and every copy's upper volume and
// fills them with one short-lived container, the first time a copy's
// service asks (the others wait for it); nil without an error when the
// copies cannot use an overlay (they are filled one by one instead).
func (p *Provider) prepareOverlay(ctx context.Context, b *build) (*forkOverlay, error) {
	from := b.fork
	from.ovOnce.Do(func() {
		from.ov, from.ovErr = p.makeOverlay(ctx, b)
		from.phase("overlay base made (%v, used: %v)", from.ovErr, from.ov != nil)
	})
	return from.ov, from.ovErr
}

func (p *Provider) makeOverlay(ctx context.Context, b *build) (*forkOverlay, error) {
	from := b.fork
	if p.forkNoOverlay || p.cfg.Storage != config.StorageVolume || len(from.reqs) == 0 {
		return nil, nil
	}
	ov := &forkOverlay{targets: map[string]string{}, uppers: map[string]string{}}
	helper := "" // the image the fill container runs: one of the copies'
	// dataDirs: the services whose data directory is mounted whole (the
	// data volume of PostgreSQL's image), service → the data directory's
	// path inside the volume.
	dataDirs := map[string]string{}
	// PostgreSQL's data directory, when one volume of the image holds it
	// (the images' layout), is mounted over the whole volume.
	if _, ok := from.copies["postgres"]; ok && from.srcVolumes["postgres"] != "" {
		ref := b.images["postgres"].Ref
		ii, err := p.inspectImage(ctx, "postgres", ref)
		if err != nil {
			return nil, err
		}
		pgdata := imageEnv(ii, "PGDATA")
		if pgdata == "" {
			pgdata = defaultPGDATA
		}
		if _, vols := dataMounts(ii, pgdata, p.cfg.Storage); len(vols) == 1 && below(pgdata, vols[0]) {
			ov.targets["postgres"] = vols[0]
			dataDirs["postgres"] = strings.TrimPrefix(strings.TrimPrefix(path.Clean(pgdata), path.Clean(vols[0])), "/")
			helper = ref
		}
	}
	// A service that starts from a captured file reads it from forkDir,
	// and writes its own saves there. The file is streamed once out of
	// the source's container into the base (it may lie on a tmpfs no
	// other container sees), not once per copy.
	for _, svc := range slices.Sorted(maps.Keys(from.copies)) {
		s, ok := services.Lookup(svc)
		f, isForker := s.(services.Forker)
		if !ok || !isForker || f.ForkArgs(forkDir, from.copies[svc]) == nil {
			continue
		}
		ov.targets[svc] = forkDir
		if helper == "" {
			helper = b.images[svc].Ref
		}
	}
	if len(ov.targets) == 0 {
		return nil, nil
	}
	ok, move := p.overlayWorks(ctx, b, helper)
	if !ok {
		return nil, nil
	}
	suffix, err := randomHex(6)
	if err != nil {
		return nil, err
	}
	ov.base = instanceName(b.req.Lineage, "fork", 0) + "-base-" + suffix
	from.ovCleanup = func(ctx context.Context) error { return p.removeOverlay(ctx, ov) }
	// The uppers first, then the base: a base no upper names is an
	// orphan (ListManaged).
	var upperNames []string
	for _, req := range from.reqs {
		labels := instanceLabels(req.Address, req.Lineage, req.Generation)
		labels[LabelForkUpper] = ov.base
		name := instanceName(req.Lineage, req.Address, req.Generation) + "-upper-" + suffix
		v, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels})
		if err != nil {
			return nil, p.engineErr("create the upper volume of "+req.Address, err)
		}
		if v.Mountpoint == "" {
			return nil, errors.New("the engine did not say where volume " + name + " is")
		}
		ov.uppers[req.Address] = v.Mountpoint
		upperNames = append(upperNames, name)
	}
	v, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: ov.base, Driver: "local", Labels: map[string]string{
		LabelManaged: "true", LabelLineage: b.req.Lineage, LabelForkBase: "true"}})
	if err != nil {
		return nil, p.engineErr("create the fork's base volume", err)
	}
	if ov.baseDir = v.Mountpoint; ov.baseDir == "" {
		return nil, errors.New("the engine did not say where the fork's base volume is")
	}

	// One container, as root (cp -a keeps every owner and mode): each
	// service's capture into its lower directory; for PostgreSQL, its
	// ForkFilled marker and the directories above the data directory
	// owned by the server's user (the image's layout); then in each
	// upper volume, each service's upper and work directories, the upper
	// owned (and, for PostgreSQL, moded) as its lower's top: overlayfs
	// gives the merged top the upper's. Only sh, cp -a, mkdir, chown,
	// chmod and stat -c: GNU's or busybox's.
	mounts := []mount.Mount{{Type: mount.TypeVolume, Source: ov.base, Target: fillDstMount}}
	// moves: service → its source volume's directory on the engine's
	// host, for the services whose stage is renamed into the base through
	// a bind of root, the directory holding them all (overlayWorks tells
	// whether the engine allows the bind).
	moves := map[string]string{}
	root := ""
	if move {
		dirs := []string{ov.baseDir}
		for svc := range dataDirs {
			vi, err := p.cli.VolumeInspect(ctx, from.srcVolumes[svc])
			if err != nil {
				return nil, p.engineErr("inspect the "+svc+" volume of the fork's source", err)
			}
			if vi.Mountpoint != "" {
				moves[svc] = vi.Mountpoint
				dirs = append(dirs, vi.Mountpoint)
			}
		}
		if root = volumesRoot(dirs...); root != "" && len(moves) > 0 {
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: root, Target: volumesBind})
		} else {
			clear(moves)
		}
	}
	var sh, ups strings.Builder
	sh.WriteString("set -e\n")
	var streamed []string // file services, copied into the helper before it starts
	for _, svc := range slices.Sorted(maps.Keys(ov.targets)) {
		lower := path.Join(fillDstMount, "l-"+svc)
		up, work := `"$up"/`+shellquote.Quote("u-"+svc), `"$up"/`+shellquote.Quote("w-"+svc)
		if rel, ok := dataDirs[svc]; ok {
			srcMount := path.Join(fillSrcMount, svc)
			mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: from.srcVolumes[svc], Target: srcMount, ReadOnly: true})
			src := path.Join(srcMount, from.srcRels[svc])
			data := path.Join(lower, rel)
			// With the bind, the stage is renamed into the base: it is the
			// fork's own copy, and the source's ForkClean finds it gone. A
			// rename that cannot be (another filesystem) copies, as mv
			// does; one that fails copies as without the bind.
			if srcDir, ok := moves[svc]; ok {
				mvFrom, mvTo := shellquote.Quote(viaBind(root, path.Join(srcDir, from.srcRels[svc]))), shellquote.Quote(viaBind(root, path.Join(ov.baseDir, "l-"+svc, rel)))
				fmt.Fprintf(&sh, "mkdir -p \"$(dirname %[1]s)\"\nif ! mv %[2]s %[1]s; then\n", mvTo, mvFrom)
			}
			fmt.Fprintf(&sh, "mkdir -p %[2]s\ncp -a %[1]s/. %[2]s/\n", shellquote.Quote(src), shellquote.Quote(data))
			if _, ok := moves[svc]; ok {
				sh.WriteString("fi\n")
			}
			fmt.Fprintf(&sh, "touch %[1]s/%[2]s\nchown \"$(stat -c %%u:%%g %[1]s)\" %[1]s/%[2]s\n", shellquote.Quote(data), pgsvc.ForkFilled)
			fmt.Fprintf(&sh, "d=%s\nwhile [ \"$d\" != %s ]; do d=$(dirname \"$d\"); chown \"$(stat -c %%u:%%g %s)\" \"$d\"; done\n",
				shellquote.Quote(data), shellquote.Quote(lower), shellquote.Quote(data))
			fmt.Fprintf(&ups, "\tmkdir %[1]s %[2]s\n\tchown \"$(stat -c %%u:%%g %[3]s)\" %[1]s\n\tchmod \"$(stat -c %%a %[3]s)\" %[1]s\n", up, work, shellquote.Quote(lower))
			continue
		}
		streamed = append(streamed, svc)
		file := path.Join(lower, path.Base(from.copies[svc].Path))
		fmt.Fprintf(&sh, "chown \"$(stat -c %%u:%%g %[1]s)\" %[2]s\n", shellquote.Quote(file), shellquote.Quote(lower))
		// A /tmp-like top: the server's user owns it and writes there.
		fmt.Fprintf(&ups, "\tmkdir %[1]s %[2]s\n\tchown \"$(stat -c %%u:%%g %[3]s)\" %[1]s\n\tchmod 1777 %[1]s\n", up, work, shellquote.Quote(lower))
	}
	for i, name := range upperNames {
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: name, Target: fmt.Sprintf("/sbx-fork-up/%d", i)})
	}
	fmt.Fprintf(&sh, "for up in /sbx-fork-up/*; do\n%sdone\n", ups.String())
	stream := func(ctx context.Context, id string) error {
		for _, svc := range streamed {
			if err := p.streamForkedInto(ctx, from, svc, id, fillDstMount, "l-"+svc); err != nil {
				return err
			}
		}
		return nil
	}
	if err := p.runHelper(ctx, b, helper, "0:0", []string{"/bin/sh", "-c", sh.String()}, mounts, stream); err != nil {
		return nil, fmt.Errorf("fill the fork's base: %w", err)
	}
	return ov, nil
}

// removeOverlay removes what makeOverlay made: the uppers (unless a copy
// that still exists uses one: DeleteManaged's check) and the base once
// no upper names it. Safe to repeat.
func (p *Provider) removeOverlay(ctx context.Context, ov *forkOverlay) error {
	vs, err := p.cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelForkUpper+"="+ov.base))})
	if err != nil {
		return p.engineErr("list the fork's upper volumes", err)
	}
	var items []Managed
	for _, v := range vs.Volumes {
		items = append(items, Managed{Kind: KindVolume, ID: v.Name, Name: v.Name})
	}
	errs := []error{p.DeleteManaged(ctx, items)}
	errs = append(errs, p.removeForkBaseIfUnused(ctx, ov.base))
	return errors.Join(errs...)
}

// removeForkBaseIfUnused removes the fork base volume base once no upper
// volume names it.
func (p *Provider) removeForkBaseIfUnused(ctx context.Context, base string) error {
	vs, err := p.cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelForkUpper+"="+base))})
	if err != nil {
		return p.engineErr("list the upper volumes of "+base, err)
	}
	if len(vs.Volumes) > 0 {
		return nil
	}
	err = p.cli.VolumeRemove(ctx, base, false)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return p.engineErr("remove the fork base "+base, err)
	}
	return nil
}

// overlayWorks tells, once per provider, whether the engine's local
// volume driver mounts overlayfs on its volumes' filesystem (ok), and
// whether a helper may bind the directory holding the volumes to rename
// between them (move): a container of image (any command) with an
// overlay volume over three throwaway volumes that renames a file from a
// fourth to a fifth; without the bind when that fails. A rootless engine
// or a kernel without overlayfs says no to the overlay; an engine that
// refuses the bind (Docker Desktop shares only some host paths) to the
// move.
func (p *Provider) overlayWorks(ctx context.Context, b *build, image string) (ok, move bool) {
	p.overlay.mu.Lock()
	defer p.overlay.mu.Unlock()
	if p.overlay.known {
		return p.overlay.ok, p.overlay.move
	}
	move = true
	err := p.probeOverlay(ctx, b, image, true)
	if err != nil && ctx.Err() == nil {
		move = false
		err = p.probeOverlay(ctx, b, image, false)
	}
	if ctx.Err() != nil {
		return false, false // not learnt: ask again next time
	}
	p.overlay.known, p.overlay.ok, p.overlay.move = true, err == nil, err == nil && move
	if err != nil {
		p.overlay.why = err.Error()
	}
	return p.overlay.ok, p.overlay.move
}

func (p *Provider) probeOverlay(ctx context.Context, b *build, image string, move bool) error {
	suffix, err := randomHex(6)
	if err != nil {
		return err
	}
	// Labelled as the copy's that runs the probe, as its helper container
	// is: the copy's lock keeps reap away while it runs, and what a
	// killed process leaves is that copy's orphans.
	labels := instanceLabels(b.req.Address, b.req.Lineage, b.req.Generation)
	var dirs []string
	var names []string
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, n := range names {
			_ = p.cli.VolumeRemove(rctx, n, true)
		}
	}()
	n := 3 // lower, upper, work
	if move {
		n = 5 // and a file's first and second volume
	}
	for i := range n {
		name := fmt.Sprintf("%s-overlay-probe-%s-%d", instanceName(b.req.Lineage, "fork", 0), suffix, i)
		v, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels})
		if err != nil {
			return p.engineErr("create a volume", err)
		}
		names = append(names, name)
		dirs = append(dirs, v.Mountpoint)
	}
	mounts := []mount.Mount{{Type: mount.TypeVolume, Target: "/probe", VolumeOptions: &mount.VolumeOptions{Labels: labels,
		DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{"type": "overlay", "device": "overlay",
			"o": fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", dirs[0], dirs[1], dirs[2])}}}}}
	script := "touch /probe/ok"
	if move {
		root := volumesRoot(dirs...)
		if root == "" {
			return errors.New("the volumes have no common directory to bind")
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: root, Target: volumesBind})
		from, to := shellquote.Quote(viaBind(root, dirs[3])+"/f"), shellquote.Quote(viaBind(root, dirs[4])+"/f")
		script += " && touch " + from + " && mv " + from + " " + to + " && [ -e " + to + " ]"
	}
	return p.runHelper(ctx, b, image, "0:0", []string{"/bin/sh", "-c", script, "probe"}, mounts, nil)
}

// runHelper runs a short-lived container of image as user with
// entrypoint and mounts, no network, and waits for it to exit 0; it is
// removed (with its anonymous volumes) whatever happens. It carries the
// instance's labels (and LabelForkFill), so a killed process's is swept
// with the instance. prepare, when not nil, is given the created
// container before it starts.
func (p *Provider) runHelper(ctx context.Context, b *build, image, user string, entrypoint []string, mounts []mount.Mount,
	prepare func(ctx context.Context, id string) error) error {
	labels := instanceLabels(b.req.Address, b.req.Lineage, b.req.Generation)
	labels[LabelForkFill] = "true"
	cfg := &container.Config{Image: image, User: user, Entrypoint: entrypoint, Labels: labels}
	host := &container.HostConfig{NetworkMode: "none", SecurityOpt: []string{"no-new-privileges"}, Mounts: mounts}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	resp, err := p.cli.ContainerCreate(cctx, cfg, host, nil, nil, "")
	cancel()
	if err != nil {
		return p.engineErr("create a helper container", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = p.cli.ContainerRemove(rctx, resp.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
	if prepare != nil {
		if err := prepare(ctx, resp.ID); err != nil {
			return err
		}
	}
	waitC, errC := p.cli.ContainerWait(ctx, resp.ID, container.WaitConditionNextExit)
	if err := p.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return p.engineErr("start a helper container", err)
	}
	select {
	case w := <-waitC:
		if w.StatusCode != 0 {
			return fmt.Errorf("the helper container exited with code %d: %s", w.StatusCode, b.scrubText(p.logTail(ctx, resp.ID, 20)))
		}
		return nil
	case err := <-errC:
		return p.engineErr("wait for a helper container", err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// streamForkedInto streams svc's captured file out of the source's
// container into dir/sub of container id (created, not started; dir may
// be a volume's mount point): a tar stream, rewritten to put it under sub
// when sub is not "".
func (p *Provider) streamForkedInto(ctx context.Context, from *forkFrom, svc, id, dir, sub string) error {
	c, ok := from.copies[svc]
	if !ok {
		return fmt.Errorf("no captured data for %s", svc)
	}
	s, ok := services.Lookup(svc)
	if !ok {
		return fmt.Errorf("service %s is not supported by the docker provider", svc)
	}
	out, outW := io.Pipe()
	go func() {
		err := p.execIn(ctx, from.src[svc], s.Account(), []string{"tar", "-c", "-f", "-", "-C", path.Dir(c.Path), path.Base(c.Path)}, outW)
		outW.CloseWithError(err)
	}()
	var in io.Reader = out
	if sub != "" {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(prefixTar(pw, out, sub)) }()
		defer pr.CloseWithError(io.ErrClosedPipe)
		in = pr
	}
	err := p.cli.CopyToContainer(ctx, id, dir, in, container.CopyToContainerOptions{})
	out.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return p.engineErr("copy the captured "+svc+" data into container "+shortID(id), err)
	}
	return nil
}

// prefixTar copies the tar stream src to dst with every entry under dir
// (a directory entry first).
func prefixTar(dst io.Writer, src io.Reader, dir string) error {
	tr, tw := tar.NewReader(src), tar.NewWriter(dst)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755}); err != nil {
		return err
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		h.Name = path.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}
