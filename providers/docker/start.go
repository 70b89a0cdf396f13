package docker

import (
	"context"
	"fmt"
	"github.com/docker/docker/api/types/mount"
	"maps"
	"slices"
	"time"

	"github.com/docker/go-connections/nat"

	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// startService starts a service as it says (services.Service's Start):
// its files copied in before start, into secretDir (so no password is on
// the command line or in the environment) and wherever it mounts one
// alone; its args after the image's entrypoint; the instance's TLS files
// beside its own; a tmpfs on every VOLUME the image declares; its data
// root (Start.NeedsData) on the sandbox's storage, as PostgreSQL's data
// directory; an empty read-only tmpfs on each of its EmptyDirs. It waits
// for the service's own readiness check (Ready, through waitReady, which
// sees a container that exits) and records what the instance offers.
// PostgreSQL starts from a template instead (postgres.go).
func (p *Provider) startService(ctx context.Context, b *build, s services.Service, feats []string, c state.Credentials) error {
	svc := s.Name()
	img := b.images[svc]
	ii, err := p.inspectImage(ctx, svc, img.Ref)
	if err != nil {
		return err
	}
	facts, err := p.imageFacts(ctx, svc, img, ii)
	if err != nil {
		return err
	}
	at := services.Placement{SecretDir: secretDir, DataRoot: dataRoot}
	t := b.reach.tls
	if t != nil {
		at.TLSCert, at.TLSKey, at.TLSCA = secretPath(tlsCertName), secretPath(tlsKeyName), secretPath(tlsCAName)
	}
	st, err := s.Start(services.StartInput{Creds: c, Features: feats, Allowed: p.cat.Allowed(svc),
		Modules: img.Modules, SelfLoaded: facts.SelfLoaded, ImageEnv: imageEnvOf(ii)}, at)
	if err != nil {
		return err
	}
	var forker services.Forker
	if b.fork != nil {
		// A fork's copy starts from the source's captured data (fork.go).
		f, ok := s.(services.Forker)
		if !ok {
			return fmt.Errorf("service %s cannot be forked", svc)
		}
		forker = f
		st.Args = append(st.Args, f.ForkArgs(forkDir, b.fork.copies[svc])...)
	}
	b.addSecrets(st.Derived...)
	port := nat.Port(fmt.Sprintf("%d/tcp", s.Port()))
	spec := containerSpec{Service: svc, Image: img.Ref, Cmd: st.Args, Env: st.Env, Port: port, Tmpfs: tmpfsMounts(ii)}
	if st.NeedsData {
		// The data root on the sandbox's storage (a labelled volume or a
		// tmpfs), as PostgreSQL's data directory is.
		spec.Tmpfs, spec.Volumes = dataMounts(ii, at.DataRoot, p.cfg.Storage)
	}
	for _, dir := range st.EmptyDirs {
		// Empty and read-only, root's: nothing to read, nowhere to write.
		spec.Tmpfs[dir] = emptyDirOptions
	}
	var files []containerFile
	for _, name := range slices.Sorted(maps.Keys(st.Files)) {
		files = append(files, containerFile{Path: secretPath(name), Content: st.Files[name], Mode: 0o600})
	}
	for _, at := range slices.Sorted(maps.Keys(st.Mounts)) {
		files = append(files, containerFile{Path: at, Content: st.Files[st.Mounts[at]], Mode: 0o600})
	}
	if t != nil {
		files = append(files, t.files()...)
	}
	tlsConf, err := clientTLS(c, c.Host)
	if err != nil {
		return err
	}
	onOverlay := false
	if forker != nil {
		// The captured file on the fork's overlay (forkoverlay.go), in
		// place when the container starts; else copied in below.
		ov, err := p.prepareOverlay(ctx, b)
		if err != nil {
			return err
		}
		var m mount.Mount
		if m, onOverlay = ov.mount(svc, b.req.Address, serviceLabels(b.req.Address, b.req.Lineage, b.req.Generation, svc)); onOverlay {
			spec.Mounts = append(spec.Mounts, m)
		}
	}
	id, name, err := p.createContainer(ctx, b, spec)
	if err != nil {
		return err
	}
	if err := p.copyFiles(ctx, id, facts.Owner, files...); err != nil {
		return fmt.Errorf("copy files into %s: %w", name, err)
	}
	if forker != nil {
		how := fillOverlay
		if !onOverlay {
			t := time.Now()
			if err := p.copyForked(ctx, b.fork, svc, id); err != nil {
				return err
			}
			b.fork.phase("%s's data into %s in %.2fs", svc, name, time.Since(t).Seconds())
			how = fillStream
		}
		b.fork.noteFill(svc, how)
	}
	if c.Port, err = p.startContainer(ctx, b, svc, id, name, port); err != nil {
		return err
	}
	poll := func(ctx context.Context, attempt func(context.Context) error) error {
		return p.waitReady(ctx, id, p.readyTimeout(), attempt)
	}
	// Available: what the instance offers, and what the image's
	// inspection saw work in it (a request for one is a replace that
	// works).
	available, err := s.Ready(ctx, c, tlsConf, poll, services.Check{ImageRef: img.Ref, Runtime: "docker",
		Features: feats, Allowed: p.cat.Allowed(svc), Seen: facts.Features})
	if err != nil {
		return err
	}
	b.done(svc, c, available)
	return nil
}

// dataRoot is where a service that keeps data keeps it
// (services.Placement.DataRoot): a path no image uses, so a VOLUME the
// image declares for its own data directory gets the tmpfs every VOLUME
// gets and the data goes where storage says.
const dataRoot = "/var/lib/sandboxer"

// emptyDirOptions mount an empty tmpfs read-only, owned by root with
// mode 0700, of the smallest size (services.Start.EmptyDirs).
const emptyDirOptions = "ro,mode=0700,size=4k"
