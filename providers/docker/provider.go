package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/docker/docker/client"
	"golang.org/x/sync/singleflight"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
)

// Defaults for the timeouts a Provider uses.
const (
	DefaultReadyTimeout = 60 * time.Second
	DefaultProbeTimeout = 3 * time.Second
	// cleanupTimeout bounds removing a failed instance; cleanup runs on a
	// fresh context so an interrupted Create still cleans up.
	cleanupTimeout = 30 * time.Second
	pingTimeout    = 10 * time.Second
	// createTimeout bounds a container or network create, which runs to
	// completion even when the caller's context ends (see createContainer).
	createTimeout = time.Minute
)

// Provider drives one Docker engine. It is safe for concurrent use once
// configured; set the exported fields before the first call.
type Provider struct {
	// waiting counts the services waiting to become ready (loadFactor).
	waiting atomic.Int32

	cli  *client.Client
	host string
	cfg  *config.Provider
	cat  *config.Catalog

	// ReadyTimeout bounds how long Create waits for each service to answer
	// its protocol probe. Zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// ProbeTimeout bounds each service's check in Probe. Zero means
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// PullProgress, when set, receives Docker's pull progress (the same
	// lines `docker pull` prints) while Check fetches a missing image.
	PullProgress io.Writer
	// CADir is where the CA files of TLS instances are written for clients
	// (SANDBOXER_<SVC>_CA); TLS instances cannot be created without it.
	CADir string

	// nets collapses concurrent lookups of a lineage's network into one
	// engine round trip (network.go).
	nets singleflight.Group
	// tpls collapses concurrent template lookups and builds of one key
	// (pgtemplate.go).
	tpls singleflight.Group

	// afterContainerCreate, when set (tests only), runs after a service's
	// container is created and before it starts.
	afterContainerCreate func(service string)
	// onForkCapture, when set (tests only), is told each service's
	// capture of a fork (fork.go): its method, hold and the hold's steps.
	onForkCapture func(service string, c services.ForkCopy)

	// overlay remembers whether the engine mounts overlayfs volumes
	// (forkoverlay.go); forkNoOverlay, when set (tests only), fills every
	// copy of a fork instead.
	overlay       overlayProbe
	forkNoOverlay bool

	// caps remembers what each image provides (capabilities.go).
	caps capCache

	// lockStaleAfter, when set (tests only), replaces lockStale for
	// waiters (enginelock.go).
	lockStaleAfter time.Duration

	// templateSalt, when set (tests only), goes into every template key
	// (pgtemplate.go), so a test has templates of its own.
	templateSalt string

	// onSecrets, when set (tests only), receives every secret Create
	// generates, so tests can prove none of them leaks into an error.
	onSecrets func(...string)
}

var _ apply.Provider = (*Provider)(nil)

// New connects to the engine named by cfg.Host, else DOCKER_HOST and the
// other DOCKER_* variables, else the local socket, negotiating the API
// version, and checks it answers.
func New(ctx context.Context, cfg *config.Provider, cat *config.Catalog) (*Provider, error) {
	if cfg == nil {
		return nil, errors.New("docker provider: no provider configuration")
	}
	if cat == nil {
		return nil, errors.New("docker provider: no catalog")
	}
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker provider: configure client: %w", err)
	}
	p := &Provider{cli: cli, host: cli.DaemonHost(), cfg: cfg, cat: cat}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ping, err := cli.Ping(pctx)
	if err != nil {
		cli.Close()
		return nil, p.engineErr("connect", err)
	}
	// Settle the API version now, from this ping: negotiated lazily, the
	// first requests sent at once would race on it (go test -race).
	cli.NegotiateAPIVersionPing(ping)
	return p, nil
}

// Ping checks that the engine answers now (apply.Pinger: serve's
// readiness).
func (p *Provider) Ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := p.cli.Ping(pctx); err != nil {
		return p.engineErr("ping", err)
	}
	return nil
}

var _ apply.Pinger = (*Provider)(nil)

// Close releases the client's connections.
func (p *Provider) Close() error {
	return p.cli.Close()
}

// engineErr wraps an engine error with what was being done and, when the
// engine cannot be reached at all, says where it was looked for and how to
// point sandboxer elsewhere.
func (p *Provider) engineErr(doing string, err error) error {
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("docker provider: %w at %s to %s "+
			"(start it, or set DOCKER_HOST or provider \"docker\" { host = \"…\" }): %w",
			apply.ErrEngine, p.host, doing, err)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

func (p *Provider) readyTimeout() time.Duration {
	if p.ReadyTimeout > 0 {
		return p.ReadyTimeout
	}
	return DefaultReadyTimeout
}

func (p *Provider) probeTimeout() time.Duration {
	if p.ProbeTimeout > 0 {
		return p.ProbeTimeout
	}
	return DefaultProbeTimeout
}
