package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/internal/scram"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/services"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/state"
)

// Forks on Kubernetes (sandboxer fork, issue 32; docs/fork.md). The
// capture is the services' own (services.Forker), run through the exec
// API in the source's pod: PostgreSQL's hold script stops its processes
// and stages the data directory beside itself, Redis's BGSAVE writes its
// RDB file inside the hold. Each copy is then an ordinary Create (its own
// credentials, Secret, TLS material and CA, pod) but for its data, which
// is streamed from the source's pod into the copy's pod, one exec out of
// the source (tar) into one exec in the copy, the bytes passing through
// this process once per copy:
//
//   - A service that starts from its data directory (ForkArgs nil:
//     PostgreSQL) runs the fork start script (pgsvc.ForkStartScript, in
//     the copy's Secret, as the template start script is): it waits until
//     the stage is unpacked into the copy's emptyDir, recovers it as after
//     a crash and sets the copy's own passwords (SCRAM verifiers only) in
//     single-user mode, and only then execs the image's entrypoint.
//   - A service that starts from a file (ForkArgs: Redis's and Valkey's
//     RDB) gets an init container of its own image and user ("fork-"
//     + service) that holds an emptyDir at forkDir until the file is in
//     it; the service's container mounts the same emptyDir and starts
//     with the file (the args ForkArgs gives).
//
// The copies start at once. On any failure every copy made so far is
// deleted; the stage in the source is removed in every case (and by the
// source's own container after half an hour should this process die).

// forkDir is where a copy's service that starts from a file finds it.
const forkDir = "/var/lib/sandboxer-fork"

// forkFilled is the marker the init container waits for.
const forkFilled = ".filled"

// keyForkStart is the key of PostgreSQL's fork start script in a copy's
// Secret.
const keyForkStart = "pg-from-fork.sh"

// forkFrom is what the copies of one fork start from: the source's pod,
// its containers and the captured data per service.
type forkFrom struct {
	pod        string
	containers map[string]string // service → the source's container
	copies     map[string]services.ForkCopy
	// fills holds a token per fill stream running: a fill is a pair of
	// exec streams through the API server and the kubelets, and more
	// at once than the nodes have cores to carry cut one another (ten on
	// the local 2-core cluster did).
	fills chan struct{}
}

// DefaultForkFills is how many of a fork's copies are filled at once
// unless Provider.ForkFills says otherwise.
const DefaultForkFills = 2

// DefaultForkStall is how long a fill stream may move no bytes before it
// counts as cut (retryCut sends it again) unless Provider.ForkStall says
// otherwise. A fill's length grows with the data; its stall does not.
const DefaultForkStall = time.Minute

var _ apply.Forker = (*Provider)(nil)

// Fork captures src's data at one instant and starts one instance per
// request from it, all at once. On any failure every copy made so far is
// deleted; the capture's stage in the source is removed in all cases.
func (p *Provider) Fork(ctx context.Context, src *state.Record, reqs []apply.CreateRequest) (*apply.Forked, error) {
	if len(reqs) == 0 {
		return nil, errors.New("fork: no copies asked for")
	}
	scrub := redact.ForRecord(src)
	forkers := map[string]services.Forker{}
	for _, svc := range src.Services {
		s, ok := services.Lookup(svc)
		if !ok {
			return nil, fmt.Errorf("fork %s: service %s is not supported by the kubernetes provider", src.Address, svc)
		}
		f, ok := s.(services.Forker)
		if !ok {
			return nil, fmt.Errorf("fork %s: service %s %w: take a snapshot and request with restore instead", src.Address, svc, apply.ErrNotForkable)
		}
		forkers[svc] = f
	}
	pod, err := p.sourcePod(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", src.Address, err)
	}
	pod = p.settledSource(ctx, pod, src)
	images := map[string]string{}
	fills := p.ForkFills
	if fills <= 0 {
		fills = DefaultForkFills
	}
	from := &forkFrom{pod: pod.Name, containers: map[string]string{}, copies: map[string]services.ForkCopy{},
		fills: make(chan struct{}, fills)}
	var parts []kit.ForkPart
	for _, svc := range src.Services {
		name := src.Resources.Containers[svc]
		c, ok := src.Credentials[svc]
		if name == "" || !ok {
			return nil, fmt.Errorf("fork %s: it has no %s container: %w", src.Address, svc, apply.ErrNotFound)
		}
		if !containerRunning(pod, name) {
			return nil, fmt.Errorf("fork %s: its %s container is not running (pod %s: %s): %w", src.Address, svc, pod.Name, describe(pod), apply.ErrNotFound)
		}
		for _, ct := range pod.Spec.Containers {
			if ct.Name == name {
				images[svc] = ct.Image
			}
		}
		from.containers[svc] = name
		parts = append(parts, kit.ForkPart{Svc: svc, F: forkers[svc], In: services.Instance{Run: podRunner{p: p, pod: pod.Name, container: name},
			Creds: c, Features: src.Features[svc], Allowed: p.cat.Allowed(svc)}})
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

	stage := "fork-" + randomSuffix() + randomSuffix()
	var mu sync.Mutex
	var capture func(i int) func(context.Context) error
	capture = func(i int) func(context.Context) error {
		if i == len(parts) {
			return nil
		}
		return func(ctx context.Context) error {
			pt := parts[i]
			c, err := pt.F.ForkCapture(ctx, pt.In, stage, capture(i+1))
			mu.Lock()
			from.copies[pt.Svc] = c
			mu.Unlock()
			if err != nil {
				return fmt.Errorf("capture %s: %w", pt.Svc, err)
			}
			return nil
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, pt := range parts {
			_ = pt.F.ForkClean(cctx, pt.In, stage, from.copies[pt.Svc])
		}
	}()
	if err := capture(0)(ctx); err != nil {
		return nil, scrub.Err(fmt.Errorf("fork %s: %w", src.Address, err))
	}
	out := &apply.Forked{Created: make([]*apply.Created, len(reqs)), Methods: map[string]string{}, Bytes: total}
	for _, pt := range parts {
		out.Methods[pt.Svc] = from.copies[pt.Svc].Method
		out.Held = max(out.Held, from.copies[pt.Svc].Held)
	}

	g, gctx := errgroup.WithContext(ctx)
	for i, req := range reqs {
		req.Images = maps.Clone(images)
		g.Go(func() error {
			made, err := p.createCopy(gctx, req, from)
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
		return nil, scrub.Err(fmt.Errorf("fork %s: %w", src.Address, err))
	}
	return out, nil
}

// sourcePod is src's pod, which must be labelled as src's.
func (p *Provider) sourcePod(ctx context.Context, src *state.Record) (*corev1.Pod, error) {
	name := src.Resources.Pod
	if name == "" {
		return nil, fmt.Errorf("it has no pod: %w", apply.ErrNotFound)
	}
	pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case isNotFound(err):
		return nil, fmt.Errorf("its pod %s is gone: %w", name, apply.ErrNotFound)
	case err != nil:
		return nil, p.apiErr("get", "pods", name, err)
	case !ownedBy(pod.ObjectMeta, src.ResourceAddress()):
		return nil, fmt.Errorf("pod %s is not labelled as sandboxer's for %s: %w", name, src.ResourceAddress(), apply.ErrNotFound)
	case pod.DeletionTimestamp != nil:
		return nil, fmt.Errorf("its pod %s is being deleted: %w", name, apply.ErrNotFound)
	}
	return pod, nil
}

// sourceSettle bounds how long a fork waits for the API to report the
// source's containers running (settledSource).
const sourceSettle = 30 * time.Second

// settledSource is pod once the API reports every container of src
// running, or as it last was after sourceSettle or a failure. A source
// answers at its pod IP before the kubelet's batched status update says
// its containers run: a fork right after its create (a test, an agent
// that prepares and forks at once) read "PodInitializing" and refused a
// serving source as not running.
func (p *Provider) settledSource(ctx context.Context, pod *corev1.Pod, src *state.Record) *corev1.Pod {
	running := func(cur *corev1.Pod) bool {
		for _, svc := range src.Services {
			if !containerRunning(cur, src.Resources.Containers[svc]) {
				return false
			}
		}
		return true
	}
	if running(pod) || podFailure(pod) != nil {
		return pod
	}
	wctx, cancel := context.WithTimeout(ctx, sourceSettle)
	defer cancel()
	_ = p.watchPod(wctx, pod.Name, "", func(cur *corev1.Pod) (bool, error) {
		pod = cur
		if err := podFailure(cur); err != nil {
			return false, err
		}
		return running(cur), nil
	})
	return pod
}

// createCopy is Create of one copy of a fork: the copy starts from the
// captured data (forkRun, fillFork).
func (p *Provider) createCopy(ctx context.Context, req apply.CreateRequest, from *forkFrom) (*apply.Created, error) {
	b, err := p.newBuild(ctx, req)
	if err != nil {
		return nil, b.scrub.Err(fmt.Errorf("create %s: %w", req.Address, err))
	}
	b.fork = from
	created, err := p.create(ctx, b)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if cerr := p.cleanup(ctx, b); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup after failure: %w", cerr))
		}
		return nil, b.scrub.Err(fmt.Errorf("create %s: %w", req.Address, err))
	}
	return created, nil
}

// forkArgs are the args a copy's service starts with to read its
// captured file from forkDir; nil for a service that starts from its
// data directory (PostgreSQL).
func forkArgs(b *build, svc string) ([]string, error) {
	s, ok := services.Lookup(svc)
	if !ok {
		return nil, fmt.Errorf("service %s is not supported by the kubernetes provider", svc)
	}
	f, ok := s.(services.Forker)
	if !ok {
		return nil, fmt.Errorf("service %s %w", svc, apply.ErrNotForkable)
	}
	c, ok := b.fork.copies[svc]
	if !ok {
		return nil, fmt.Errorf("no captured data for %s", svc)
	}
	return f.ForkArgs(forkDir, c), nil
}

// forkRun turns a copy's service run into a start from the captured
// data: a file read from forkDir (filled by the init container), or, for
// the data directory, the fork start script (fromFork).
func (p *Provider) forkRun(b *build, run *serviceRun, data map[string][]byte) error {
	args, err := forkArgs(b, run.Name)
	if err != nil {
		return err
	}
	if args != nil {
		run.Args = append(run.Args, args...)
		run.ForkVolume = "fork-" + dnsSanitize(run.Name)
		return nil
	}
	return p.fromFork(b, run, data, b.creds[run.Name])
}

// fromFork turns PostgreSQL's run into a start from a fork's stage, as
// fromTemplate does from a template: the fork start script and the
// session that sets both passwords (verifiers only) go into the Secret,
// and the container runs the script with the image's entrypoint and
// command as its arguments.
func (p *Provider) fromFork(b *build, run *serviceRun, data map[string][]byte, c state.Credentials) error {
	adminVerifier, err := scram.Verifier(c.AdminPassword.Reveal())
	if err != nil {
		return err
	}
	appVerifier, err := scram.Verifier(c.Password.Reveal())
	if err != nil {
		return err
	}
	b.scrub.Add(state.Secret(adminVerifier), state.Secret(appVerifier))
	if p.onSecrets != nil {
		p.onSecrets(adminVerifier, appVerifier)
	}
	sessions := pgsvc.TemplateSessions(c, adminVerifier, appVerifier)
	files := make([]string, len(sessions))
	for i, s := range sessions {
		key := fmt.Sprintf("pg-session-%d.sql", i+1)
		files[i] = path.Join(secretDir, key)
		data[key] = s.SQL
		run.Keys = append(run.Keys, key)
	}
	data[keyForkStart] = pgsvc.ForkStartScript(sessions, files, pgsvc.SingleUserArgs(run.Args))
	run.Command = []string{"/bin/sh", path.Join(secretDir, keyForkStart)}
	run.Args = append([]string{"docker-entrypoint.sh"}, run.Args...)
	run.Keys = append(run.Keys, keyForkStart)
	slices.Sort(run.Keys)
	return nil
}

// forkInitName is the init container that holds a copy's forkDir until
// its service's captured file is in it.
func forkInitName(svc string) string { return "fork-" + dnsSanitize(svc) }

// forkInitContainer waits (up to ten minutes) for the captured file, as
// the service's own user, so that user owns it.
func forkInitContainer(r serviceRun, res corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name:            forkInitName(r.Name),
		Image:           r.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", `n=0; until [ -e ` + forkDir + `/` + forkFilled + ` ]; do n=$((n + 1)); ` +
			`if [ "$n" -gt 12000 ]; then echo "sandboxer: the forked data never arrived" >&2; exit 1; fi; sleep 0.05; done`},
		SecurityContext:          containerSecurity(r.Facts),
		Resources:                res,
		VolumeMounts:             []corev1.VolumeMount{{Name: r.ForkVolume, MountPath: forkDir}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// fillFork streams each service's captured data from the source's pod
// into the copy's pod b.name, all services at once: a file into its init
// container's forkDir, a data directory into the running service
// container, whose start script waits for it.
func (p *Provider) fillFork(ctx context.Context, b *build) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, svc := range b.services {
		args, err := forkArgs(b, svc)
		if err != nil {
			return err
		}
		c := b.fork.copies[svc]
		g.Go(func() error {
			if args != nil {
				init := forkInitName(svc)
				if err := p.awaitContainer(gctx, b.name, init); err != nil {
					return fmt.Errorf("fill %s's copy: %w", svc, err)
				}
				// A cut stream sends the file again (the marker comes last).
				err := retryCut(gctx, "fill "+svc+"'s copy", b.name, func() error {
					err := p.streamFork(gctx, b, svc, init,
						[]string{"tar", "-c", "-f", "-", "-C", path.Dir(c.Path), path.Base(c.Path)},
						[]string{"sh", "-c", `tar -x -f - -C ` + forkDir + ` && touch ` + forkDir + `/` + forkFilled})
					// The marker is the last thing written and the init
					// container ends as soon as it exists, which may cut
					// the exec's close: an init container that succeeded
					// saw it.
					if err != nil && p.initSucceeded(gctx, b.name, init) {
						return nil
					}
					return err
				})
				if err != nil {
					return fmt.Errorf("fill %s's copy: %w", svc, err)
				}
				return nil
			}
			if err := p.awaitContainer(gctx, b.name, svc); err != nil {
				return fmt.Errorf("fill %s's copy: %w", svc, err)
			}
			// The start script makes $PGDATA too; whichever comes first.
			fill := append([]string{"sh", "-c", `mkdir -p "$PGDATA" && exec "$@"`, "sh"}, pgsvc.ForkFillCommand()...)
			// A cut stream unpacks the stage again: the start script waits
			// for the marker ForkFillCommand writes only once all of it is
			// in place, and the files are the same each time.
			if err := retryCut(gctx, "fill "+svc+"'s data directory", b.name, func() error {
				return p.streamFork(gctx, b, svc, svc, pgsvc.ForkCaptureCommand(c.Path), fill)
			}); err != nil {
				return fmt.Errorf("fill %s's data directory: %w", svc, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// streamFork runs srcCmd in svc's container of the source's pod and
// dstCmd in container of the copy's pod, the one's output the other's
// input.
func (p *Provider) streamFork(ctx context.Context, b *build, svc, container string, srcCmd, dstCmd []string) error {
	select {
	case b.fork.fills <- struct{}{}:
		defer func() { <-b.fork.fills }()
	case <-ctx.Done():
		return ctx.Err()
	}
	stall := p.ForkStall
	if stall <= 0 {
		stall = DefaultForkStall
	}
	pr, pw := io.Pipe()
	// Bounded by its progress: a stream of any length runs while bytes
	// move; one that stops is cut (kit.ErrStalled reads as a cut stream).
	sctx, out, stop := kit.WatchProgress(ctx, pw, stall)
	defer stop()
	done := make(chan error, 1)
	go func() {
		err := podRunner{p: p, pod: b.fork.pod, container: b.fork.containers[svc]}.execStdin(sctx, srcCmd, nil, out)
		pw.CloseWithError(err)
		done <- err
	}()
	err := podRunner{p: p, pod: b.name, container: container}.execStdin(sctx, dstCmd, pr, nil)
	pr.CloseWithError(io.ErrClosedPipe)
	serr := <-done
	if cause := context.Cause(sctx); ctx.Err() == nil && errors.Is(cause, kit.ErrStalled) {
		return fmt.Errorf("fill %s's copy from pod %s: %w", svc, b.fork.pod, cause)
	}
	if err != nil && strings.Contains(err.Error(), "Unexpected EOF in archive") {
		// tar's word for a stream that ended early: a cut (retryCut).
		return fmt.Errorf("%w: %v", io.ErrUnexpectedEOF, err)
	}
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("read the captured data from pod %s: %w", b.fork.pod, serr)
	}
	return nil
}

// awaitContainer waits until container (an init container or not) of
// pod runs; a failed pod is an error.
func (p *Provider) awaitContainer(ctx context.Context, pod, container string) error {
	return p.watchPod(ctx, pod, "", func(cur *corev1.Pod) (bool, error) {
		if err := podFailure(cur); err != nil {
			return false, err
		}
		return containerRunning(cur, container), nil
	})
}

// checkForkRoom checks, before anything starts, that there is room for
// the stage beside the source's data and for n copies of bytes
// (kit.ForkRoom): the disk (or, with storage "tmpfs", the memory) of the
// source's node as its container sees it. With tmpfs the stage also
// counts against the source pod's memory limit, so the data must fit in
// it twice. Copies may be scheduled to other nodes; the source's node is
// the one that surely holds the stage.
func (p *Provider) checkForkRoom(ctx context.Context, run services.Runner, bytes int64, n int) error {
	tmpfs := p.cfg.Storage == config.StorageTmpfs
	if mb := int64(p.cfg.MemoryMB); tmpfs && mb > 0 && 2*bytes+bytes/10 > mb<<20 {
		return &kit.ForkRoomError{Msg: fmt.Sprintf("the source's data (%s) cannot be staged in its own memory limit (%d MiB, storage \"tmpfs\"): it needs twice the data; take a snapshot and request with restore instead",
			kit.MiB(bytes), mb)}
	}
	room, err := kit.MeasureForkRoom(ctx, run, dataRoot, kit.ForkRoom{Bytes: bytes, Copies: n, Tmpfs: tmpfs, Host: "the source's node"})
	if err != nil {
		return err
	}
	return room.Check()
}
