package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/providers/docker"
	"github.com/sandboxer/sandboxer/state"
)

// OnDemandOptions are the flags shared by request, release, extend, reap
// and serve. Events are configured by flag or environment only
// (SANDBOXER_EVENTS_FILE, SANDBOXER_WEBHOOK_URL), not in HCL: where
// lifecycle events go is a property of the machine running sandboxer,
// not of the project's committed configuration.
type OnDemandOptions struct {
	Vars        VarOptions
	LockTimeout time.Duration
	EventsFile  string
	WebhookURL  string
}

func (o *OnDemandOptions) bind(fs *pflag.FlagSet, lockTimeout time.Duration) {
	o.Vars.bind(fs)
	fs.DurationVar(&o.LockTimeout, "lock-timeout", lockTimeout, "how long to wait for another command working on the same sandbox")
	fs.StringVar(&o.EventsFile, "events-file", "", "append lifecycle events as JSON lines to `FILE` (also SANDBOXER_EVENTS_FILE)")
	fs.StringVar(&o.WebhookURL, "webhook-url", "", "also POST each event to `URL`, in the background (also SANDBOXER_WEBHOOK_URL)")
}

// onDemand is what the on-demand commands share: configuration, the one
// state store, a provider connected on first use, and the events sink.
type onDemand struct {
	f       *Factory
	cfg     *config.Config
	store   *state.Store
	prov    *lazyProvider
	sink    events.Sink
	closers []func()
	opts    OnDemandOptions
}

// openOnDemand loads configuration and opens events; the engine is only
// contacted when something needs it (releasing nothing does not).
func openOnDemand(f *Factory, o OnDemandOptions) (*onDemand, error) {
	cfg, err := loadConfig(f, o.Vars)
	if err != nil {
		return nil, err
	}
	s := &onDemand{f: f, cfg: cfg, store: f.Store(), opts: o, sink: events.Discard{}}
	s.prov = &lazyProvider{connect: func(ctx context.Context) (apply.Provider, error) {
		return f.NewProvider(ctx, cfg.Provider, f.Catalog)
	}}
	s.closers = append(s.closers, func() { _ = s.prov.Close() })
	if err := s.openEvents(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *onDemand) openEvents() error {
	path := s.opts.EventsFile
	if path == "" {
		path = s.f.Getenv("SANDBOXER_EVENTS_FILE")
	}
	url := s.opts.WebhookURL
	if url == "" {
		url = s.f.Getenv("SANDBOXER_WEBHOOK_URL")
	}
	var sinks events.Multi
	if path != "" {
		w, err := events.OpenFile(s.f.Path(path))
		if err != nil {
			return err
		}
		sinks = append(sinks, w)
		s.closers = append(s.closers, func() { _ = w.Close() })
	}
	if url != "" {
		wh, err := events.NewWebhook(url, events.WebhookOptions{})
		if err != nil {
			return err
		}
		sinks = append(sinks, wh)
		// Flush after the command's answer is out, briefly: a CLI run
		// must not hang on a dead receiver.
		s.closers = append([]func(){func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_ = wh.Close(ctx)
		}}, s.closers...)
	}
	if len(sinks) > 0 {
		s.sink = sinks
	}
	return nil
}

// close releases everything, in reverse order of opening.
func (s *onDemand) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

func (s *onDemand) broker() *ondemand.Broker {
	return &ondemand.Broker{Config: s.cfg, Catalog: s.f.Catalog, Store: s.store, Provider: s.prov,
		Events: s.sink, Now: s.f.Now, LockTimeout: s.opts.LockTimeout}
}

func (s *onDemand) reaper() *ondemand.Reaper {
	return &ondemand.Reaper{Config: s.cfg, Store: s.store, Provider: s.prov,
		Inventory: engineInventory{s.prov}, Events: s.sink, Now: s.f.Now}
}

// lazyProvider connects to the engine on first use. A failed connect is
// not remembered, so a long-running serve recovers when the engine comes
// back.
type lazyProvider struct {
	connect func(ctx context.Context) (apply.Provider, error)
	mu      sync.Mutex
	p       apply.Provider
}

func (l *lazyProvider) get(ctx context.Context) (apply.Provider, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p != nil {
		return l.p, nil
	}
	p, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.p = p
	return p, nil
}

func (l *lazyProvider) Check(ctx context.Context, services []string) (plan.Capabilities, error) {
	p, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.Check(ctx, services)
}

func (l *lazyProvider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	p, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.Create(ctx, req)
}

func (l *lazyProvider) Probe(ctx context.Context, rec *state.Record) error {
	p, err := l.get(ctx)
	if err != nil {
		return err
	}
	return p.Probe(ctx, rec)
}

func (l *lazyProvider) Delete(ctx context.Context, rec *state.Record) error {
	p, err := l.get(ctx)
	if err != nil {
		return err
	}
	return p.Delete(ctx, rec)
}

// Close closes the provider if one was connected.
func (l *lazyProvider) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.p.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// managedEngine is what the docker provider offers for finding resources
// by their labels.
type managedEngine interface {
	ListManaged(ctx context.Context, lineage string) ([]docker.Managed, error)
	DeleteManaged(ctx context.Context, items []docker.Managed) error
}

// engineInventory adapts the provider's label listing to ondemand.Inventory.
type engineInventory struct{ l *lazyProvider }

func (e engineInventory) engine(ctx context.Context) (managedEngine, error) {
	p, err := e.l.get(ctx)
	if err != nil {
		return nil, err
	}
	m, ok := p.(managedEngine)
	if !ok {
		return nil, errors.New("this provider cannot list its resources by label")
	}
	return m, nil
}

func (e engineInventory) ListManaged(ctx context.Context, lineage string) ([]ondemand.Resource, error) {
	m, err := e.engine(ctx)
	if err != nil {
		return nil, err
	}
	items, err := m.ListManaged(ctx, lineage)
	if err != nil {
		return nil, err
	}
	out := make([]ondemand.Resource, len(items))
	for i, it := range items {
		out[i] = ondemand.Resource{Kind: it.Kind, ID: it.ID, Name: it.Name, Address: it.Address, Generation: it.Generation}
	}
	return out, nil
}

func (e engineInventory) DeleteManaged(ctx context.Context, items []ondemand.Resource) error {
	m, err := e.engine(ctx)
	if err != nil {
		return err
	}
	in := make([]docker.Managed, len(items))
	for i, it := range items {
		in[i] = docker.Managed{Kind: it.Kind, ID: it.ID, Name: it.Name, Address: it.Address, Generation: it.Generation}
	}
	return m.DeleteManaged(ctx, in)
}

// parseExtensionFlags turns repeated --extensions svc=f1,f2 into a map;
// "svc" or "svc=" asks for the bare service.
func parseExtensionFlags(in []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, s := range in {
		svc, feats, _ := strings.Cut(s, "=")
		svc = strings.TrimSpace(svc)
		if svc == "" {
			return nil, fmt.Errorf("--extensions %q: want SERVICE=FEATURE[,FEATURE...], e.g. postgres=vector,pg_trgm", s)
		}
		if out[svc] == nil {
			out[svc] = []string{}
		}
		for _, f := range strings.Split(feats, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out[svc] = append(out[svc], f)
			}
		}
	}
	return out, nil
}

// untilText says when t is, for people: RFC 3339 and how long from now.
func untilText(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "never expires"
	}
	return fmt.Sprintf("expires at %s (in %s)", t.UTC().Format(time.RFC3339), t.Sub(now).Round(time.Second))
}
