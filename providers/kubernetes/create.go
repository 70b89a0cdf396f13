package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// clusterDomain is the DNS domain of the cluster's Services. It is the
// default of every distribution; a cluster configured otherwise still
// resolves the shorter <name>.<namespace>.svc, which the certificate
// names too.
const clusterDomain = "cluster.local"

// errReadyTimeout is the cause of a create's context once its ready
// timeout has passed.
var errReadyTimeout = fmt.Errorf("ready timeout: %w", context.DeadlineExceeded)

// apiWriteTimeout bounds one create of an object. It runs to completion
// even when the caller's context ends: the server finishes a create
// whose request was abandoned, and the object would appear after cleanup
// ran; letting the call return means cleanup knows to delete it.
const apiWriteTimeout = 30 * time.Second

// build is one Create in progress.
type build struct {
	req      apply.CreateRequest
	ns, name string
	services []string // in start rank order (services.Service.StartRank)
	images   map[string]config.Image
	facts    map[string]imageFacts
	scrub    redact.Scrubber
	withTLS  bool

	mu        sync.Mutex
	creds     map[string]state.Credentials
	available map[string][]string
	versions  map[string]map[string]string
	caFile    string

	// tpl is the template PostgreSQL starts from; nil: from scratch.
	tpl *pgTemplate
	// fork, for a copy of a fork (fork.go): what its services start
	// from; nil for an ordinary create.
	fork *forkFrom
	// foreign are the kinds whose object of the instance's name exists
	// and is not sandboxer's for it (why the create failed): cleanup
	// never removes them.
	foreign map[string]bool
}

func (b *build) setForeign(kind string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.foreign == nil {
		b.foreign = map[string]bool{}
	}
	b.foreign[kind] = true
}

// dnsNames are the in-cluster names of the instance (its hostname in the
// lineage's shared Service, shared.go), longest (the one handed out)
// first.
func (b *build) dnsNames() []string {
	host := b.name + "." + sharedName(b.req.Lineage)
	svc := host + "." + b.ns + ".svc"
	return []string{svc + "." + clusterDomain, svc, host + "." + b.ns, host}
}

func (b *build) setCA(caPEM, file string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.caFile = file
	for svc, c := range b.creds {
		c.CA, c.CAFile = caPEM, file
		b.creds[svc] = c
	}
}

func (b *build) cred(svc string) state.Credentials {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.creds[svc]
}

func (b *build) done(svc string, c state.Credentials, available map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.creds[svc] = c
	b.available[svc] = slices.Sorted(maps.Keys(available))
	b.versions[svc] = available
}

// Create provisions one instance: its Secret and its pod with one
// container per service (the lineage's shared Service
// and NetworkPolicy are made on its first Create, shared.go); ready once
// every service answers its protocol probe with the handed-out
// credentials on the pod's IP, which a watch of the pod (not a poll)
// brings. That is two writes and one watch, three requests, per
// sandbox. On any failure it deletes everything it made (on a fresh
// context) and returns an error quoting the failing container's log,
// scrubbed of secrets.
//
// Objects already named like this instance can only be leftovers of an
// interrupted Create (state is written after Create returns): they are
// deleted and created anew.
func (p *Provider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	b, err := p.newBuild(ctx, req)
	if err != nil {
		return nil, b.scrub.Err(fmt.Errorf("create %s: %w", req.Address, err))
	}
	created, err := p.create(ctx, b)
	if err != nil && b.tpl != nil && ctx.Err() == nil && p.templateDamaged(ctx, b.name, b.tpl.Service) {
		// The template could not be used (the container never started a
		// server): rebuild it once and start the sandbox again.
		bad := b.tpl.Build
		p.pgtpl.forget(b.tpl.Key)
		if cerr := p.cleanup(ctx, b); cerr != nil {
			return nil, b.scrub.Err(fmt.Errorf("create %s: %w", req.Address, errors.Join(err, cerr)))
		}
		if err = p.pgTemplateFor(ctx, b, bad); err == nil {
			created, err = p.create(ctx, b)
		}
	}
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

// newBuild validates the request, finds each image's facts and makes the
// credentials.
func (p *Provider) newBuild(ctx context.Context, req apply.CreateRequest) (*build, error) {
	b := &build{req: req, ns: p.ns, facts: map[string]imageFacts{},
		creds: map[string]state.Credentials{}, available: map[string][]string{}, versions: map[string]map[string]string{}}
	images, err := p.validate(req)
	if err != nil {
		return b, err
	}
	b.images = images
	b.name = podName(req.Lineage, req.Address, req.Generation)
	b.withTLS = req.Publish.TLS
	b.services = req.Features.Services()
	slices.SortStableFunc(b.services, func(x, y string) int { return services.StartRank(x) - services.StartRank(y) })
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for _, svc := range b.services {
		g.Go(func() error {
			f, err := p.imageFacts(gctx, svc, images[svc])
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			b.facts[svc] = f
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return b, err
	}
	database := req.Database
	if database == "" {
		database = appDatabase
	}
	for _, svc := range b.services {
		app, err := redact.NewPassword()
		if err != nil {
			return b, err
		}
		admin, err := redact.NewPassword()
		if err != nil {
			return b, err
		}
		c := state.Credentials{User: appUser, Password: app, AdminUser: adminUser, AdminPassword: admin,
			NetworkHost: b.dnsNames()[0], NetworkPort: services.Port(svc)}
		if s, ok := services.Lookup(svc); ok && s.NamesDatabase() {
			c.Database = database
		}
		b.creds[svc] = c
		b.scrub.Add(app, admin)
		if p.onSecrets != nil {
			p.onSecrets(app.Reveal(), admin.Reveal())
		}
	}
	return b, nil
}

// create makes the objects and waits for the services. The Secret goes
// first and the pod that mounts it second: created the other way round
// (to give the Secret the pod as its owner), the kubelet often got to the
// volume before the Secret existed and retried it half a second later,
// which made a cold start 1.3 times as long as the direct way. The
// Secret has no owner reference therefore (one write more to patch it
// in): Delete removes it by the UID the record lists, and the orphan
// sweep finds it by its labels should a crash come between.
func (p *Provider) create(ctx context.Context, b *build) (*apply.Created, error) {
	if b.tpl == nil && b.fork == nil {
		if err := p.pgTemplateFor(ctx, b, ""); err != nil {
			return nil, err
		}
	}
	secret, pod, _, err := p.objects(b)
	if err != nil {
		return nil, err
	}
	if p.placePod != nil {
		p.placePod(pod)
	}
	// The lineage's shared objects are off the path to ready: made (on
	// first use only) while the Secret and the pod are created.
	shared := make(chan error, 1)
	go func() { shared <- p.ensureShared(ctx, b.req.Lineage) }()
	var sec *corev1.Secret
	if err := p.createObject(ctx, b, "secrets", func(wctx context.Context) error {
		var err error
		sec, err = p.cs.CoreV1().Secrets(p.ns).Create(wctx, secret, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error { return p.deleteLeftovers(ctx, b) }); err != nil {
		return nil, err
	}
	var made *corev1.Pod
	if err := p.createObject(ctx, b, "pods", func(wctx context.Context) error {
		var err error
		made, err = p.cs.CoreV1().Pods(p.ns).Create(wctx, pod, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error { return p.deleteLeftoverPod(ctx, b) }); err != nil {
		return nil, err
	}
	// The ready timeout bounds the pod's start and, after a fork's fill,
	// the services' readiness: a copy's fill waits for its turn among the
	// fork's copies (forkFrom.fills) and takes as long as its bytes, and
	// neither is a pod that will not start.
	rctx, cancelReady := context.WithCancelCause(ctx)
	defer cancelReady(nil)
	readyTimer := time.AfterFunc(p.readyTimeout(), func() { cancelReady(errReadyTimeout) })
	defer readyTimer.Stop()
	g, gctx := errgroup.WithContext(rctx)
	ipc := make(chan string, 1)
	watchCtx, stopWatch := context.WithCancel(gctx)
	defer stopWatch()
	var lastMu sync.Mutex
	var last *corev1.Pod
	g.Go(func() error {
		sent := false
		err := p.watchPod(watchCtx, b.name, made.ResourceVersion, func(cur *corev1.Pod) (bool, error) {
			lastMu.Lock()
			last = cur
			lastMu.Unlock()
			if err := podFailure(cur); err != nil {
				return false, err
			}
			if !sent && cur.Status.PodIP != "" && (!b.withTLS || containerRunning(cur, tlsInitName)) {
				sent = true
				ipc <- cur.Status.PodIP
			}
			return false, nil // until the services answer (stopWatch)
		})
		if watchCtx.Err() != nil && gctx.Err() == nil {
			return nil // stopped: every service is ready
		}
		return err
	})
	g.Go(func() error {
		defer stopWatch()
		var ip string
		select {
		case ip = <-ipc:
		case <-gctx.Done():
			return gctx.Err()
		}
		if b.withTLS {
			if err := p.deliverTLS(gctx, b, ip); err != nil {
				return err
			}
		}
		if b.fork != nil {
			if !readyTimer.Stop() {
				return context.Cause(rctx)
			}
			if err := p.fillFork(gctx, b); err != nil {
				return err
			}
			readyTimer.Reset(p.readyTimeout())
		}
		if p.fakeReady {
			for _, svc := range b.services {
				c := b.cred(svc)
				c.Host, c.Port = ip, services.Port(svc)
				b.done(svc, c, nil)
			}
			return nil
		}
		sg, sctx := errgroup.WithContext(gctx)
		for _, svc := range b.services {
			sg.Go(func() error { return p.withLog(sctx, b, svc, p.serviceReady(sctx, b, svc, ip)) })
		}
		return sg.Wait()
	})
	if err := g.Wait(); err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(rctx), errReadyTimeout) {
			lastMu.Lock()
			why := pendingReason(last)
			lastMu.Unlock()
			if errors.Is(err, context.Canceled) {
				err = context.DeadlineExceeded
			}
			return nil, fmt.Errorf("not ready within %s (pod %s: %s): %w", p.readyTimeout(), b.name, why, err)
		}
		return nil, err
	}
	if err := <-shared; err != nil {
		return nil, err
	}
	containers := map[string]string{}
	for _, svc := range b.services {
		containers[svc] = svc
	}
	return &apply.Created{
		Credentials: b.creds,
		Resources: state.Resources{
			Runtime:    state.RuntimeKubernetes,
			Namespace:  p.ns,
			Pod:        b.name,
			Containers: containers,
			Owned:      map[string]string{ownedPod: string(made.UID), ownedSecret: string(sec.UID)},
		},
		AvailableExtensions: b.available,
		ExtensionVersions:   b.versions,
	}, nil
}

// objects builds the Secret and the pod of b.
func (p *Provider) objects(b *build) (*corev1.Secret, *corev1.Pod, []serviceRun, error) {
	meta := p.instanceMeta(b.req.Address, b.req.Lineage, b.req.Generation, b.name)
	data := map[string][]byte{}
	var runs []serviceRun
	at := services.Placement{SecretDir: secretDir, DataRoot: dataRoot}
	if b.withTLS {
		at.TLSCert, at.TLSKey, at.TLSCA = path.Join(tlsDir, tlsCertName), path.Join(tlsDir, tlsKeyName), path.Join(tlsDir, tlsCAName)
	}
	for _, svc := range b.services {
		s, ok := services.Lookup(svc)
		if !ok {
			return nil, nil, nil, fmt.Errorf("service %s is not supported by the kubernetes provider", svc)
		}
		img, f := b.images[svc], b.facts[svc]
		st, err := s.Start(services.StartInput{Creds: b.creds[svc], Features: b.req.Features[svc], Allowed: p.cat.Allowed(svc),
			Modules: img.Modules, SelfLoaded: f.SelfLoaded, ImageEnv: f.env}, at)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", svc, err)
		}
		// Not passwords, but no business in an error either.
		for _, d := range st.Derived {
			b.scrub.Add(d)
			if p.onSecrets != nil {
				p.onSecrets(d.Reveal())
			}
		}
		for name, content := range st.Files {
			if _, dup := data[name]; dup {
				return nil, nil, nil, fmt.Errorf("%s: secret file %s is another service's too", svc, name)
			}
			data[name] = content
		}
		run := serviceRun{Name: svc, Image: img.Ref, Args: st.Args, Env: envVars(st.Env), Port: s.Port(), Facts: f,
			Keys: slices.Sorted(maps.Keys(st.Files)), SecretFiles: st.Mounts, EmptyDirs: st.EmptyDirs}
		if st.NeedsData {
			run.DataVolume, run.DataDir = "data-"+svc, dataRoot
		}
		if t := b.tpl; t != nil && t.Service == svc {
			if err := p.fromTemplate(b, &run, data, b.creds[svc]); err != nil {
				return nil, nil, nil, err
			}
		}
		if b.fork != nil {
			if err := p.forkRun(b, &run, data); err != nil {
				return nil, nil, nil, err
			}
		}
		runs = append(runs, run)
	}
	pod := p.podSpec(meta, runs, b.withTLS, &runs[0])
	// Its own DNS name in the lineage's shared Service.
	pod.Spec.Hostname, pod.Spec.Subdomain = b.name, sharedName(b.req.Lineage)
	return secretSpec(meta, data), pod, runs, nil
}

// createObject runs one create to completion (see apiWriteTimeout). An
// object of the same name that exists already is a leftover of an
// interrupted Create of this very instance: leftover deletes it and the
// create is tried once more.
func (p *Provider) createObject(ctx context.Context, b *build, resource string, create func(context.Context) error, leftover func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiWriteTimeout)
	defer cancel()
	err := create(wctx)
	if isAlreadyExists(err) {
		if derr := leftover(ctx); derr != nil {
			return fmt.Errorf("remove leftovers of an interrupted create: %w", derr)
		}
		err = create(wctx)
	}
	if err != nil {
		return p.apiErr("create", resource, b.name, err)
	}
	return ctx.Err()
}

// deleteLeftovers deletes the instance's objects left by an earlier,
// interrupted Create, after checking they are labelled as its own.
func (p *Provider) deleteLeftovers(ctx context.Context, b *build) error {
	pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, b.name, metav1.GetOptions{})
	if err == nil && !ownedBy(pod.ObjectMeta, b.req.Address) {
		b.setForeign(kindContainer)
		return fmt.Errorf("pod %s exists and is not labelled as sandboxer's for %s; refusing to remove it", b.name, b.req.Address)
	}
	sec, err := p.cs.CoreV1().Secrets(p.ns).Get(ctx, b.name, metav1.GetOptions{})
	if err == nil && !ownedBy(sec.ObjectMeta, b.req.Address) {
		b.setForeign(kindSecret)
		return fmt.Errorf("secret %s exists and is not labelled as sandboxer's for %s; refusing to remove it", b.name, b.req.Address)
	}
	return p.deleteInstance(ctx, b.name, legacyKinds...)
}

// deleteLeftoverPod deletes a pod of the instance's name left by an
// earlier, interrupted Create (the Secret was just made anew), after
// checking it is labelled as the instance's, and waits for it to go.
func (p *Provider) deleteLeftoverPod(ctx context.Context, b *build) error {
	pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, b.name, metav1.GetOptions{})
	if err == nil && !ownedBy(pod.ObjectMeta, b.req.Address) {
		b.setForeign(kindContainer)
		return fmt.Errorf("pod %s exists and is not labelled as sandboxer's for %s; refusing to remove it", b.name, b.req.Address)
	}
	if err := p.deleteOne(ctx, kindContainer, b.name); err != nil {
		return err
	}
	return p.waitGone(ctx, b.name)
}

// serviceReady waits for one service on the pod's IP, then checks its
// features, as the Docker provider does after a start.
func (p *Provider) serviceReady(ctx context.Context, b *build, svc, ip string) error {
	c := b.cred(svc)
	c.Host, c.Port = ip, services.Port(svc)
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		return err
	}
	s, ok := services.Lookup(svc)
	if !ok {
		return fmt.Errorf("service %s is not supported by the kubernetes provider", svc)
	}
	available, err := s.Ready(ctx, c, tlsConf, pollReady, services.Check{ImageRef: b.images[svc].Ref, Runtime: "kubernetes",
		Features: b.req.Features[svc], Allowed: p.cat.Allowed(svc), Seen: b.facts[svc].Features})
	if err != nil {
		return err
	}
	b.done(svc, c, available)
	return nil
}

// withLog attaches the tail of the service container's log to its error.
// A service that failed only because a sibling failed first (ctx is
// cancelled) gets none: the first error is reported anyway.
func (p *Provider) withLog(ctx context.Context, b *build, svc string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", svc, err)
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return &serviceError{Service: svc, Pod: b.name, Err: err, Log: b.scrub.Text(p.logTail(lctx, b.name, svc, logTailLines))}
}

// cleanup deletes what a failed Create made, on a fresh context so an
// interrupt still cleans up, and its CA file. An object of the
// instance's name that is not sandboxer's (b.foreign) stays.
func (p *Provider) cleanup(ctx context.Context, b *build) error {
	if b.name == "" {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var kinds []string
	b.mu.Lock()
	for _, k := range instanceKinds {
		if !b.foreign[k] {
			kinds = append(kinds, k)
		}
	}
	b.mu.Unlock()
	err := p.deleteInstance(cctx, b.name, kinds...)
	// A failed first sandbox of a lineage leaves nothing it shared.
	err = errors.Join(err, p.SweepShared(cctx, b.req.Lineage))
	if b.caFile != "" {
		if rerr := kit.RemoveCAFiles(&state.Record{Credentials: map[string]state.Credentials{"ca": {CAFile: b.caFile}}}); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// validate re-checks the request against the catalog: it is the security
// boundary, so the provider does not rely on config validation alone
// (kit.ValidateRequest); Kubernetes has no user networks.
func (p *Provider) validate(req apply.CreateRequest) (map[string]config.Image, error) {
	if len(req.Networks) > 0 {
		return nil, fmt.Errorf("invalid request: Kubernetes has no user networks to join (networks %v); "+
			"clients in the cluster reach a sandbox by its Service name", req.Networks)
	}
	return kit.ValidateRequest(req, p.cat, p.cfg, p.CADir)
}
