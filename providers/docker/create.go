package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// build is one Create in progress: what exists so far, for cleanup, and the
// results of each service.
type build struct {
	req    apply.CreateRequest
	scrub  redact.Scrubber // every secret of this instance; during the starts, only through addSecrets and scrubText
	starts *startGates
	// pgVerifier is the SCRAM verifier of the postgres app password, for
	// the init script (pginit.go).
	pgVerifier string
	reach      *buildReach // reach.go: TLS material and CA file
	// images is what each service runs (validate fills it).
	images map[string]config.Image

	mu         sync.Mutex
	netID      string            // the lineage's network (see onNetwork)
	containers map[string]string // service → id
	names      map[string]string // service → container name
	creds      map[string]state.Credentials
	available  map[string][]string
	versions   map[string]map[string]string

	// fork, for a copy of a fork (fork.go): what its services start
	// from instead of empty data; nil for an ordinary create.
	fork *forkFrom
}

// addSecrets and scrubText share the scrubber between the services'
// starts, which run at once: a start may add a secret it derives while
// another's error is scrubbed.
func (b *build) addSecrets(secrets ...state.Secret) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.scrub.Add(secrets...)
}

func (b *build) scrubText(s string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.scrub.Text(s)
}

func (b *build) addContainer(service, id, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.containers[service] = id
	b.names[service] = name
}

// done records a ready service: its credentials and the allowed
// extensions its engine can enable, name → version.
func (b *build) done(service string, c state.Credentials, available map[string]string) {
	if b.fork != nil {
		b.fork.phase("%s of %s ready", service, b.req.Address)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.creds[service] = c
	b.available[service] = slices.Sorted(maps.Keys(available))
	b.versions[service] = available
}

// Create provisions one instance: one ready container per service, on the
// lineage's shared network (network.go), overlapped where the engine allows (see create). On any
// failure it removes everything it made and returns an error quoting the
// failing container's log, scrubbed of secrets.
//
// Create owns the (address, lineage, generation) triple: resources already
// labelled with it can only be leftovers of an interrupted Create (state is
// written after Create returns), so they are removed first.
func (p *Provider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	return p.create1(ctx, req, nil)
}

// create1 is Create, of a fork's copy when from is not nil.
func (p *Provider) create1(ctx context.Context, req apply.CreateRequest, from *forkFrom) (*apply.Created, error) {
	images, err := kit.ValidateRequest(req, p.cat, p.cfg, p.CADir)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", req.Address, err)
	}
	b := &build{
		req:        req,
		images:     images,
		starts:     newStartGates(req.Features.Services()),
		containers: map[string]string{},
		names:      map[string]string{},
		creds:      map[string]state.Credentials{},
		available:  map[string][]string{},
		versions:   map[string]map[string]string{},
		fork:       from,
	}
	creds, err := p.newCredentials(req.Features.Services(), req.Database)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", req.Address, err)
	}
	if err := p.prepareReach(ctx, b, creds); err != nil {
		return nil, fmt.Errorf("create %s: %w", req.Address, err)
	}
	for _, c := range creds {
		b.scrub.Add(c.Password, c.AdminPassword)
		if p.onSecrets != nil {
			p.onSecrets(c.Password.Reveal(), c.AdminPassword.Reveal())
		}
	}
	if c, ok := creds["postgres"]; ok {
		// Not a password, but no business in an error either: psql echoes a
		// failing init statement into the container log that errors quote.
		if b.pgVerifier, err = scramVerifier(c.Password.Reveal()); err != nil {
			return nil, fmt.Errorf("create %s: %w", req.Address, err)
		}
		b.scrub.Add(state.Secret(b.pgVerifier))
		if p.onSecrets != nil {
			p.onSecrets(b.pgVerifier)
		}
	}

	created, err := p.create(ctx, b, creds)
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted: the engine call that noticed says nothing useful.
			err = fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if cerr := p.cleanup(ctx, b); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup after failure: %w", cerr))
		}
		return nil, b.scrub.Err(fmt.Errorf("create %s: %w", req.Address, err))
	}
	return created, nil
}

// create orders the engine work by what each step needs, so that little
// of it lies on the path to PostgreSQL's readiness, the longest:
//
//	sweep ──────────┬─ postgres: create, copy files, start ─┬─ initdb, init script, ready
//	lineage network ┘                                       └─ redis: create, copy, start, ready
//
// The lineage network exists after the first Create of the lineage, so
// finding it is one list call.
func (p *Provider) create(ctx context.Context, b *build, creds map[string]state.Credentials) (*apply.Created, error) {
	req := b.req
	pre, pctx := errgroup.WithContext(ctx)
	pre.Go(func() error {
		if b.fork != nil {
			// Fork swept every copy's leftovers before any copy began: a
			// sweep here could remove what another copy already made for
			// this one (its upper volume, forkoverlay.go).
			return nil
		}
		if err := p.sweep(pctx, req.Address, req.Lineage, req.Generation); err != nil {
			return fmt.Errorf("remove leftovers of an interrupted create: %w", err)
		}
		return nil
	})
	pre.Go(func() error {
		id, err := p.ensureNetwork(pctx, req.Lineage)
		b.netID = id // read only after pre.Wait
		return err
	})
	if err := pre.Wait(); err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, svc := range req.Features.Services() {
		feats := req.Features[svc]
		g.Go(func() error {
			// A service that fails before its start must not hold up the
			// services ranked after it.
			defer b.starts.pass(svc)
			if err := b.starts.wait(gctx, svc); err != nil {
				return err
			}
			// PostgreSQL starts from a template data directory
			// (postgres.go, pgtemplate.go); every other service as it
			// says (start.go).
			s, ok := services.Lookup(svc)
			var err error
			switch {
			case !ok:
				err = fmt.Errorf("service %s is not supported by the docker provider", svc)
			case svc == "postgres":
				err = p.startPostgres(gctx, b, feats, creds[svc])
			default:
				err = p.startService(gctx, b, s, feats, creds[svc])
			}
			return p.withLog(gctx, b, svc, err)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &apply.Created{
		Credentials: b.creds,
		Resources: state.Resources{
			Network:    b.netID,
			Containers: b.containers,
		},
		AvailableExtensions: b.available,
		ExtensionVersions:   b.versions,
	}, nil
}

// withLog attaches the tail of the service container's log to its error.
// A service that failed only because a sibling failed first (ctx, the
// group's context, is cancelled) gets no log: errgroup reports the first
// error anyway.
func (p *Provider) withLog(ctx context.Context, b *build, svc string, err error) error {
	if err == nil {
		return nil
	}
	b.mu.Lock()
	id, name := b.containers[svc], b.names[svc]
	b.mu.Unlock()
	if id == "" || ctx.Err() != nil {
		return fmt.Errorf("%s: %w", svc, err)
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return &serviceError{Service: svc, Container: name, Err: err, Log: b.scrubText(p.logTail(lctx, id, logTailLines))}
}

// cleanup removes what a failed Create made. It uses a fresh context so that
// an interrupt (a cancelled ctx) still cleans up. The label sweep also
// catches a container the engine created after our request was cancelled.
func (p *Provider) cleanup(ctx context.Context, b *build) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	b.mu.Lock()
	ids := make([]string, 0, len(b.containers))
	for _, id := range b.containers {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, p.removeContainer(cctx, id))
	}
	errs = append(errs, p.sweep(cctx, b.req.Address, b.req.Lineage, b.req.Generation))
	errs = append(errs, b.reach.cleanup())
	errs = append(errs, p.removeNetworkIfUnused(cctx, b.req.Lineage))
	return errors.Join(errs...)
}

// newCredentials generates fresh random passwords for every service;
// postgres's role owns database ("" for appDatabase).
func (p *Provider) newCredentials(svcs []string, database string) (map[string]state.Credentials, error) {
	if database == "" {
		database = appDatabase
	}
	out := map[string]state.Credentials{}
	for _, svc := range svcs {
		app, err := redact.NewPassword()
		if err != nil {
			return nil, err
		}
		admin, err := redact.NewPassword()
		if err != nil {
			return nil, err
		}
		c := state.Credentials{
			Host:          loopback,
			User:          appUser,
			Password:      app,
			AdminUser:     adminUser,
			AdminPassword: admin,
		}
		if s, ok := services.Lookup(svc); ok && s.NamesDatabase() {
			c.Database = database
		}
		out[svc] = c
	}
	return out, nil
}
