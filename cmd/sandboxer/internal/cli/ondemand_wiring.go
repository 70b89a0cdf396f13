package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/internal/eventsink"
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
	// Replica stamps every event (serve --replica); "" leaves them as
	// they are.
	Replica string
	// sinkFor, when set, adds a sink made for the configuration (serve's
	// metrics and dashboard recorder) beside the file and webhook; not a
	// flag.
	sinkFor func(*config.Config) events.Sink
	// forward: the command hands out URLs for as long as it runs (serve,
	// mcp), so Kubernetes sandboxes may be forwarded (Options.Forward);
	// not a flag.
	forward bool
}

// bind adds the shared flags; lockTimeout > 0 adds --lock-timeout with
// that default. reap passes 0: it never waits for a lock (it skips what
// another command holds), so a wait flag would do nothing.
func (o *OnDemandOptions) bind(fs *pflag.FlagSet, lockTimeout time.Duration) {
	o.Vars.bind(fs)
	if lockTimeout > 0 {
		fs.DurationVar(&o.LockTimeout, "lock-timeout", lockTimeout, "how long to wait for another command working on the same sandbox")
	}
	fs.StringVar(&o.EventsFile, "events-file", "", "append lifecycle events as JSON lines to `FILE` (also SANDBOXER_EVENTS_FILE)")
	fs.StringVar(&o.WebhookURL, "webhook-url", "", "also POST each event to `URL`, in the background (also SANDBOXER_WEBHOOK_URL)")
}

// onDemand is what the on-demand commands share: the library over the
// configuration (state store, a provider connected on first use) and the
// events sink.
type onDemand struct {
	f       *Factory
	lib     *sandboxer.Sandboxer
	sink    events.Sink
	closers []func()
	opts    OnDemandOptions
	// cfg locates sandbox blocks in error messages.
	cfg *config.Config
}

// openOnDemand loads configuration and opens events; the engine is only
// contacted when something needs it (releasing nothing does not).
func openOnDemand(f *Factory, o OnDemandOptions) (*onDemand, error) {
	cfg, err := loadConfig(f, o.Vars)
	if err != nil {
		return nil, err
	}
	s := &onDemand{f: f, opts: o, cfg: cfg, sink: events.Discard{}}
	if err := s.openEvents(); err != nil {
		s.close()
		return nil, err
	}
	if o.sinkFor != nil {
		s.sink = events.Multi{s.sink, o.sinkFor(cfg)}
	}
	if o.Replica != "" {
		s.sink = events.Stamp(s.sink, o.Replica)
	}
	if s.lib, err = f.library(cfg, o.LockTimeout, s.sink, o.forward); err != nil {
		s.close()
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = s.lib.Close() })
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
		w, err := eventsink.OpenFile(s.f.Path(path))
		if err != nil {
			return err
		}
		sinks = append(sinks, w)
		s.closers = append(s.closers, func() { _ = w.Close() })
	}
	if url != "" {
		wh, err := eventsink.NewWebhook(url, eventsink.WebhookOptions{})
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
