package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
)

// Copies on an overlay: the cheapest copy volume storage allows when the
// engine's local volume driver can mount overlayfs (probed once per
// provider, overlayWorks). The stage is copied once, inside the engine's
// host, into a base volume; each copy's data volume is then an overlay
// of that base (its lower layer, shared and never written) and an upper
// directory of its own, in a volume of its own. A copy costs a mount, not
// a copy of the bytes: N copies of a gigabyte write one gigabyte, and
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
// Volume storage with one volume holding the data directory only (the
// images' layout); anything else, or an engine that cannot mount
// overlayfs, fills each copy as before (forkfill.go).
const (
	LabelForkBase  = "dev.sandboxer.fork-base"
	LabelForkUpper = "dev.sandboxer.fork-upper"
	fillOverlay    = "overlay"
)

// Inside the base and upper volumes: the data (the lower layer), and a
// copy's upper and work directories (overlayfs wants both on one
// filesystem).
const (
	overlayLower = "d"
	overlayUpper = "u"
	overlayWork  = "w"
)

// forkOverlay is a fork's base, ready for its copies to mount.
type forkOverlay struct {
	base    string // the base volume
	baseDir string // its directory on the engine's host
	target  string // where a copy's data volume is mounted
	// uppers: copy address → its upper volume's directory on the engine's
	// host.
	uppers map[string]string
}

// overlayProbe is what the provider learnt of its engine's overlayfs.
type overlayProbe struct {
	mu    sync.Mutex
	known bool
	ok    bool
	why   string
}

// overlayMount is a copy's data volume: an anonymous volume of the local
// driver that mounts the base under the copy's upper layer.
func (ov *forkOverlay) overlayMount(address string, labels map[string]string) mount.Mount {
	up := ov.uppers[address]
	return mount.Mount{
		Type:   mount.TypeVolume,
		Target: ov.target,
		VolumeOptions: &mount.VolumeOptions{Labels: labels, DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
			"type":   "overlay",
			"device": "overlay",
			"o": fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s",
				path.Join(ov.baseDir, overlayLower), path.Join(up, overlayUpper), path.Join(up, overlayWork)),
		}}},
	}
}

// prepareOverlay makes the fork's base and every copy's upper volume and
// fills them with one short-lived container, the first time a copy asks
// (the others wait for it); nil without an error when the copies cannot
// use an overlay (they are filled one by one instead).
func (p *Provider) prepareOverlay(ctx context.Context, b *build, image string, volumes []string, pgdata string) (*forkOverlay, error) {
	from := b.fork
	from.ovOnce.Do(func() {
		from.ov, from.ovErr = p.makeOverlay(ctx, b, image, volumes, pgdata)
	})
	return from.ov, from.ovErr
}

func (p *Provider) makeOverlay(ctx context.Context, b *build, image string, volumes []string, pgdata string) (*forkOverlay, error) {
	from := b.fork
	srcVol := from.srcVolumes["postgres"]
	if p.forkNoOverlay || srcVol == "" || len(volumes) != 1 || !below(pgdata, volumes[0]) || len(from.reqs) == 0 {
		return nil, nil
	}
	if ok, _ := p.overlayWorks(ctx, b, image); !ok {
		return nil, nil
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(path.Clean(pgdata), path.Clean(volumes[0])), "/")
	suffix, err := randomHex(6)
	if err != nil {
		return nil, err
	}
	base := instanceName(b.req.Lineage, "fork", 0) + "-base-" + suffix
	ov := &forkOverlay{base: base, target: volumes[0], uppers: map[string]string{}}
	from.ovCleanup = func(ctx context.Context) error { return p.removeOverlay(ctx, ov) }
	// The uppers first, then the base: a base no upper names is an
	// orphan (ListManaged).
	var upperNames []string
	for _, req := range from.reqs {
		labels := instanceLabels(req.Address, req.Lineage, req.Generation)
		labels[LabelForkUpper] = base
		name := containerName(req.Lineage, req.Address, req.Generation, "postgres") + "-upper-" + suffix
		v, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels})
		if err != nil {
			return nil, p.engineErr("create the upper volume of "+req.Address, err)
		}
		ov.uppers[req.Address] = v.Mountpoint
		upperNames = append(upperNames, name)
	}
	v, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: base, Driver: "local", Labels: map[string]string{
		LabelManaged: "true", LabelLineage: b.req.Lineage, LabelForkBase: "true"}})
	if err != nil {
		return nil, p.engineErr("create the fork's base volume", err)
	}
	ov.baseDir = v.Mountpoint
	if ov.baseDir == "" || slices.Contains(slices.Collect(maps.Values(ov.uppers)), "") {
		return nil, errors.New("the engine did not say where the fork's volumes are")
	}

	// One container: the stage into the base's lower directory (cp -a as
	// root keeps every owner and mode), its ForkFilled marker, the
	// directories above the data directory owned by the server's user
	// (the image's layout), and each upper's two directories, the upper
	// owned and moded as the lower's top (overlayfs gives the merged top
	// the upper's).
	mounts := []mount.Mount{
		{Type: mount.TypeVolume, Source: srcVol, Target: fillSrcMount, ReadOnly: true},
		{Type: mount.TypeVolume, Source: base, Target: fillDstMount},
	}
	for i, name := range upperNames {
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: name, Target: fmt.Sprintf("/sbx-fork-up/%d", i)})
	}
	lower := path.Join(fillDstMount, overlayLower)
	script := `set -e
src=$1 lower=$2 data=$3
mkdir -p "$data"
cp -a "$src/." "$data/"
touch "$data/` + pgsvc.ForkFilled + `"
chown --reference="$data" "$data/` + pgsvc.ForkFilled + `"
d=$data
while [ "$d" != "$lower" ]; do d=$(dirname "$d"); chown --reference="$data" "$d"; done
for up in /sbx-fork-up/*; do
	mkdir "$up/` + overlayUpper + `" "$up/` + overlayWork + `"
	chown --reference="$lower" "$up/` + overlayUpper + `"
	chmod --reference="$lower" "$up/` + overlayUpper + `"
done`
	if rel != "" {
		// The volume's top is the image's directory above the data
		// directory: owned by the server's user, as in the source.
		script = strings.Replace(script, `chown --reference="$data" "$lower"`, `chown --reference="$src/.." "$lower" 2>/dev/null || chown --reference="$data" "$lower"`, 1)
	}
	if err := p.runHelper(ctx, b, image, "0:0", []string{"/bin/sh", "-c", script, "fill",
		path.Join(fillSrcMount, from.srcRels["postgres"]), lower, path.Join(lower, rel)}, mounts); err != nil {
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
// volume driver mounts overlayfs on its volumes' filesystem: a container
// of image (any command) with an overlay volume over three throwaway
// volumes. A rootless engine or a kernel without overlayfs says no.
func (p *Provider) overlayWorks(ctx context.Context, b *build, image string) (bool, string) {
	p.overlay.mu.Lock()
	defer p.overlay.mu.Unlock()
	if p.overlay.known {
		return p.overlay.ok, p.overlay.why
	}
	err := p.probeOverlay(ctx, b, image)
	if ctx.Err() != nil {
		return false, "cancelled" // not learnt: ask again next time
	}
	p.overlay.known, p.overlay.ok = true, err == nil
	if err != nil {
		p.overlay.why = err.Error()
	}
	return p.overlay.ok, p.overlay.why
}

func (p *Provider) probeOverlay(ctx context.Context, b *build, image string) error {
	suffix, err := randomHex(6)
	if err != nil {
		return err
	}
	// Labelled as the lineage's, without an address: what a killed
	// process leaves is an orphan reap removes.
	labels := map[string]string{LabelManaged: "true", LabelLineage: b.req.Lineage}
	var dirs []string
	var names []string
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, n := range names {
			_ = p.cli.VolumeRemove(rctx, n, true)
		}
	}()
	for i := range 3 { // lower, upper, work
		name := fmt.Sprintf("%s-overlay-probe-%s-%d", instanceName(b.req.Lineage, "fork", 0), suffix, i)
		v, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels})
		if err != nil {
			return p.engineErr("create a volume", err)
		}
		names = append(names, name)
		dirs = append(dirs, v.Mountpoint)
	}
	m := mount.Mount{Type: mount.TypeVolume, Target: "/probe", VolumeOptions: &mount.VolumeOptions{Labels: labels,
		DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{"type": "overlay", "device": "overlay",
			"o": fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", dirs[0], dirs[1], dirs[2])}}}}
	return p.runHelper(ctx, b, image, "0:0", []string{"/bin/sh", "-c", "touch /probe/ok", "probe"}, []mount.Mount{m})
}

// runHelper runs a short-lived container of image as user with
// entrypoint and mounts, no network, and waits for it to exit 0; it is
// removed (with its anonymous volumes) whatever happens. It carries the
// instance's labels (and LabelForkFill), so a killed process's is swept
// with the instance.
func (p *Provider) runHelper(ctx context.Context, b *build, image, user string, entrypoint []string, mounts []mount.Mount) error {
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
