package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/services"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/state"
)

var _ apply.Forker = (*Provider)(nil)

// forkDir is where a copy's container receives the captured data
// before it starts: its own layer, which exists before the container
// runs (a tmpfs data directory does not), from where the start moves
// the data into place (PostgreSQL, ForkStartScript) or reads it (an RDB
// file, services.Forker.ForkArgs).
const forkDir = "/tmp"

// debugForkEnv, when set, makes Fork write each service's capture (its
// hold and the hold's steps) on stderr, for the benchmark's figures.
const debugForkEnv = "SANDBOXER_DEBUG_FORK"

// forkFrom is what the copies of one fork start from: the source's
// container and captured data per service.
type forkFrom struct {
	src    map[string]string // service → source container id
	copies map[string]services.ForkCopy
	// srcVolumes and srcRels: the named volume holding a service's stage
	// in its source container and the stage's path inside it (none for a
	// tmpfs), for the fill inside the engine (forkfill.go).
	srcVolumes, srcRels map[string]string
	// fills bounds the copies filled at once (the engine host's cores).
	fills chan struct{}
	// reqs are the copies asked for; the overlay (forkoverlay.go), made
	// once for all of them by the first copy to start its PostgreSQL,
	// and how to remove it if the fork fails.
	reqs      []apply.CreateRequest
	ovOnce    sync.Once
	ov        *forkOverlay
	ovErr     error
	ovCleanup func(context.Context) error

	// began and debug: when the fork began and, with debugForkEnv set,
	// where its time goes (figures only).
	began time.Time
	debug bool

	mu sync.Mutex
	// filled is the path each service's copies were filled by
	// (fillVolume, fillStream), for apply.Forked.Methods.
	filled map[string]string
}

// phase notes a step of the fork on stderr, with debugForkEnv set.
func (f *forkFrom) phase(format string, args ...any) {
	if f.debug {
		fmt.Fprintf(os.Stderr, "sandboxer: fork: %6.2fs %s\n", time.Since(f.began).Seconds(), fmt.Sprintf(format, args...))
	}
}

func (f *forkFrom) noteFill(svc, how string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.filled[svc] == "" || f.filled[svc] == how {
		f.filled[svc] = how
	} else {
		f.filled[svc] = "mixed"
	}
}

// Fork captures src's data at one instant and starts one instance per
// request from it, all at once (see services.Forker for the capture).
// Each copy is a Create in all but its data: its own credentials, TLS
// material and containers, labelled with its own address. On any
// failure every copy made so far is removed; the capture's stage in the
// source is removed in all cases.
func (p *Provider) Fork(ctx context.Context, src *state.Record, reqs []apply.CreateRequest) (*apply.Forked, error) {
	if len(reqs) == 0 {
		return nil, errors.New("fork: no copies asked for")
	}
	began := time.Now()
	scrub := redact.ForRecord(src)
	var parts []kit.ForkPart
	images := map[string]string{}
	mounts := map[string][]container.MountPoint{}
	for _, svc := range src.Services {
		s, ok := services.Lookup(svc)
		if !ok {
			return nil, fmt.Errorf("fork %s: service %s is not supported by the docker provider", src.Address, svc)
		}
		f, ok := s.(services.Forker)
		if !ok {
			return nil, fmt.Errorf("fork %s: service %s %w: take a snapshot and request with restore instead", src.Address, svc, apply.ErrNotForkable)
		}
		id, c, err := serviceOf(src, svc)
		if err != nil {
			return nil, fmt.Errorf("fork %s: %w", src.Address, err)
		}
		ci, err := p.cli.ContainerInspect(ctx, id)
		if err != nil {
			return nil, p.engineErr("inspect the "+svc+" container of "+src.Address, err)
		}
		if ci.State == nil || !ci.State.Running || ci.Config == nil {
			return nil, fmt.Errorf("fork %s: its %s container is not running: %w", src.Address, svc, apply.ErrNotFound)
		}
		images[svc] = ci.Config.Image
		mounts[svc] = ci.Mounts
		parts = append(parts, kit.ForkPart{Svc: svc, F: f, In: services.Instance{Run: containerRunner{p: p, id: id}, Creds: c,
			Features: src.Features[svc], Allowed: p.cat.Allowed(svc)}})
	}
	var total int64 // what the copies will copy, each
	release, err := kit.PrepareFork(ctx, parts, func(t int64) error {
		total = t
		return p.checkForkRoom(ctx, parts[0].In.Run, total, len(reqs))
	})
	if err != nil {
		return nil, scrub.Err(fmt.Errorf("fork %s: %w", src.Address, err))
	}
	defer release()

	stage, err := forkStage()
	if err != nil {
		return nil, err
	}
	from := &forkFrom{src: map[string]string{}, copies: map[string]services.ForkCopy{},
		srcVolumes: map[string]string{}, srcRels: map[string]string{}, filled: map[string]string{},
		fills: make(chan struct{}, p.fillSlots(ctx, len(reqs))), reqs: reqs,
		began: began, debug: os.Getenv(debugForkEnv) != ""}
	from.phase("sized, room checked, connected ahead")
	// Whether the engine mounts overlays (forkoverlay.go) is learnt once
	// per provider, beside the capture: it needs nothing of it. The probe
	// carries the first copy's labels, as its helpers do.
	if p.cfg.Storage == config.StorageVolume && !p.forkNoOverlay {
		probed := make(chan struct{})
		go func() {
			defer close(probed)
			p.overlayWorks(ctx, &build{req: reqs[0]}, images[parts[0].Svc])
			from.phase("overlay probed")
		}()
		defer func() { <-probed }()
	}
	var mu sync.Mutex
	// capture(i) captures parts[i:]: parts[i] holds its data still and,
	// while it does, captures the rest. A later part's capture goes on
	// in the background once its instant is taken (its own during is
	// called), so the first part's hold ends with the instant, not with
	// the later parts' saves (a BGSAVE's file is written after it).
	var capture func(i int) func(context.Context) error
	var later errgroup.Group
	capture = func(i int) func(context.Context) error {
		if i == len(parts) {
			return nil
		}
		run := func(ctx context.Context, during func(context.Context) error) error {
			pt := parts[i]
			c, err := pt.F.ForkCapture(ctx, pt.In, stage, during)
			mu.Lock()
			from.copies[pt.Svc] = c
			mu.Unlock()
			if err != nil {
				return fmt.Errorf("capture %s: %w", pt.Svc, err)
			}
			return nil
		}
		if i == 0 {
			return func(ctx context.Context) error { return run(ctx, capture(1)) }
		}
		return func(ctx context.Context) error {
			taken := make(chan error, 1)
			inner := capture(i + 1)
			later.Go(func() error {
				var once sync.Once
				err := run(ctx, func(ctx context.Context) error {
					var err error
					if inner != nil {
						err = inner(ctx)
					}
					once.Do(func() { taken <- err })
					return err
				})
				once.Do(func() { taken <- err })
				return err
			})
			return <-taken
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, pt := range parts {
			_ = pt.F.ForkClean(cctx, pt.In, stage, from.copies[pt.Svc])
		}
	}()
	err = capture(0)(ctx)
	if lerr := later.Wait(); err == nil {
		err = lerr
	}
	if err != nil {
		return nil, scrub.Err(fmt.Errorf("fork %s: %w", src.Address, err))
	}
	from.phase("captured")
	out := &apply.Forked{Created: make([]*apply.Created, len(reqs)), Methods: map[string]string{}, Bytes: total}
	for _, pt := range parts {
		id, _, _ := serviceOf(src, pt.Svc)
		from.src[pt.Svc] = id
		if v, rel, ok := volumeAt(mounts[pt.Svc], from.copies[pt.Svc].Path); ok {
			from.srcVolumes[pt.Svc], from.srcRels[pt.Svc] = v, rel
		}
		out.Methods[pt.Svc] = from.copies[pt.Svc].Method
		out.Held = max(out.Held, from.copies[pt.Svc].Held)
		if p.onForkCapture != nil {
			p.onForkCapture(pt.Svc, from.copies[pt.Svc])
		}
		if os.Getenv(debugForkEnv) != "" {
			// Figures only (scripts/benchfork): where the hold went.
			c := from.copies[pt.Svc]
			fmt.Fprintf(os.Stderr, "sandboxer: fork %s: %s captured by %s, held %s %s\n", src.Address, pt.Svc, c.Method, c.Held.Round(time.Millisecond), c.Steps)
		}
	}

	// Each copy's leftovers of an interrupted create go first, all of
	// them before any copy begins: the first copy to start its PostgreSQL
	// makes every copy's upper volume (forkoverlay.go), which a later
	// sweep of that copy would remove (and the overlay's helper, mounting
	// it by name, make again without its labels).
	if err := p.sweepCopies(ctx, reqs); err != nil {
		return nil, fmt.Errorf("fork %s: remove leftovers of an interrupted create: %w", src.Address, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, req := range reqs {
		req.Images = maps.Clone(images)
		g.Go(func() error {
			made, err := p.create1(gctx, req, from)
			from.phase("copy %d ready (%v)", i+1, err)
			out.Created[i] = made
			return err
		})
	}
	if err := g.Wait(); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for i, made := range out.Created {
			if made == nil {
				continue
			}
			rec := &state.Record{Address: reqs[i].Address, Resources: made.Resources, Credentials: made.Credentials}
			if derr := p.Delete(cctx, rec); derr != nil {
				err = errors.Join(err, fmt.Errorf("remove copy %s (sandboxer reap finds it by its labels): %w", reqs[i].Address, derr))
			}
		}
		if from.ovCleanup != nil {
			if derr := from.ovCleanup(cctx); derr != nil {
				err = errors.Join(err, fmt.Errorf("remove the fork's base (sandboxer reap finds it by its labels): %w", derr))
			}
		}
		return nil, fmt.Errorf("fork %s: %w", src.Address, err)
	}
	for svc, how := range from.filled {
		out.Methods[svc] += "+" + how
	}
	return out, nil
}

// sweepCopies removes what an interrupted create of any of reqs left
// (sweep, for all of them with one listing per lineage).
func (p *Provider) sweepCopies(ctx context.Context, reqs []apply.CreateRequest) error {
	type key struct {
		address    string
		generation int
	}
	byLineage := map[string]map[key]bool{}
	for _, r := range reqs {
		if byLineage[r.Lineage] == nil {
			byLineage[r.Lineage] = map[key]bool{}
		}
		byLineage[r.Lineage][key{r.Address, r.Generation}] = true
	}
	for lineage, want := range byLineage {
		all, err := p.ListManaged(ctx, lineage)
		if err != nil {
			return err
		}
		var mine []Managed
		for _, m := range all {
			if want[key{m.Address, m.Generation}] {
				mine = append(mine, m)
			}
		}
		if err := p.DeleteManaged(ctx, mine); err != nil {
			return err
		}
	}
	return nil
}

// fillSlots is how many copies are filled at once: the engine host's
// cores (a copy is disk and memory bandwidth; more at once only
// interleave), at least one, at most n.
func (p *Provider) fillSlots(ctx context.Context, n int) int {
	cores := 2
	if info, err := p.cli.Info(ctx); err == nil && info.NCPU > 0 {
		cores = info.NCPU
	}
	return max(1, min(cores, n))
}

// forkStage is a new fork's stage name.
func forkStage() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "fork-" + hex.EncodeToString(b), nil
}

// checkForkRoom checks, before anything starts, that the engine's host
// has the room a fork of n copies of bytes needs (kit.ForkRoom): the
// stage beside the source's data and each copy's data directory, disk
// for volume storage, memory for tmpfs. It asks the source's container
// (df of its layer, /proc/meminfo), which sees the engine's host.
func (p *Provider) checkForkRoom(ctx context.Context, run services.Runner, bytes int64, n int) error {
	room, err := kit.MeasureForkRoom(ctx, run, forkDir, kit.ForkRoom{Bytes: bytes, Copies: n,
		Tmpfs: p.cfg.Storage == config.StorageTmpfs, Host: "the engine's host"})
	if err != nil {
		return err
	}
	return room.Check()
}

// copyForked copies svc's captured data from the source's container into
// the copy's container id (created, not started), under forkDir: a tar
// stream out of an exec in the source (the engine's archive API does not
// see into a tmpfs, an exec does), into the engine's archive API of the
// copy, which unpacks it into the copy's layer.
func (p *Provider) copyForked(ctx context.Context, from *forkFrom, svc, id string) error {
	return p.streamForkedInto(ctx, from, svc, id, forkDir, "")
}

// startPostgresFromFork starts a copy's PostgreSQL from the captured
// data directory: ForkStartScript moves it into the copy's data
// directory, recovers it and sets the copy's passwords in single-user
// mode before the image's entrypoint starts the server.
func (p *Provider) startPostgresFromFork(ctx context.Context, b *build, c state.Credentials,
	spec containerSpec, owner fileOwner, ep []string, pgdata string, tlsFiles []containerFile) (*pgx.Conn, state.Credentials, error) {
	adminVerifier, err := scramVerifier(c.AdminPassword.Reveal())
	if err != nil {
		return nil, c, err
	}
	b.addSecrets(state.Secret(adminVerifier))
	if p.onSecrets != nil {
		p.onSecrets(adminVerifier)
	}
	sessions := pgsvc.TemplateSessions(c, adminVerifier, b.pgVerifier)
	names := make([]string, len(sessions))
	files := make([]containerFile, 0, len(sessions)+1+len(tlsFiles))
	for i, s := range sessions {
		names[i] = secretPath(fmt.Sprintf("pg-session-%d.sql", i+1))
		files = append(files, containerFile{Path: names[i], Content: s.SQL, Mode: 0o400})
	}
	script := pgsvc.ForkStartScript(sessions, names, pgsvc.SingleUserArgs(spec.Cmd))
	files = append(files, containerFile{Path: secretPath(templateStartScript), Content: script, Mode: 0o444})
	files = append(files, tlsFiles...)

	fs := spec
	fs.User = fmt.Sprintf("%d:%d", owner.UID, owner.GID)
	fs.Entrypoint = []string{"/bin/sh", secretPath(templateStartScript)}
	fs.Cmd = append(slices.Clone(ep), spec.Cmd...)
	fs.Env = []string{"PGDATA=" + pgdata}
	for _, e := range spec.Env {
		if !strings.HasPrefix(e, "POSTGRES_PASSWORD_FILE=") {
			fs.Env = append(fs.Env, e)
		}
	}
	fs.Tmpfs = map[string]string{}
	for dir, opts := range spec.Tmpfs {
		if below(pgdata, dir) {
			opts = fmt.Sprintf("uid=%d,gid=%d,mode=0700", owner.UID, owner.GID)
		}
		fs.Tmpfs[dir] = opts
	}
	// On volume storage the copies may share one copy of the stage under
	// an overlay each (forkoverlay.go): then the data is in place when
	// the container starts, and there is nothing to fill.
	ov, err := p.prepareOverlay(ctx, b)
	if err != nil {
		return nil, c, err
	}
	m, onOverlay := ov.mount("postgres", b.req.Address, serviceLabels(b.req.Address, b.req.Lineage, b.req.Generation, "postgres"))
	if onOverlay {
		fs.Volumes = slices.DeleteFunc(slices.Clone(fs.Volumes), func(v string) bool { return v == m.Target })
		fs.Mounts = append(slices.Clone(fs.Mounts), m)
	}
	id, name, err := p.createContainer(ctx, b, fs)
	if err != nil {
		return nil, c, err
	}
	if err := p.copyFiles(ctx, id, owner, files...); err != nil {
		return nil, c, fmt.Errorf("copy credentials and start script into %s: %w", name, err)
	}
	if c.Port, err = p.startContainer(ctx, b, "postgres", id, name, postgresPort); err != nil {
		return nil, c, err
	}
	b.fork.phase("postgres of %s started", b.req.Address)
	// The start script waits for the data: copied from the source's
	// stage into the copy's data directory (volume or tmpfs) by the
	// cheapest path the storage allows (forkfill.go).
	how := fillOverlay
	if !onOverlay {
		if how, err = p.fillPostgres(ctx, b, b.fork, id, spec.Image, pgdata, owner); err != nil {
			return nil, c, fmt.Errorf("fill the data directory of %s: %w", name, err)
		}
	}
	b.fork.noteFill("postgres", how)
	conn, err := p.awaitPostgres(ctx, id, c)
	return conn, c, err
}
