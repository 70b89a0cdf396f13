package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
)

// Metrics are one server's Prometheus metrics, in a registry of their
// own (nothing goes to the client library's global one). They hear the
// library's events (Metrics is an events.Sink: pass it to the library
// with events.Multi), count the server's calls, and read the instance and
// pool levels from the library when scraped. Their labels are block
// names (of the configuration, else "other"), routes, statuses, codes and
// event types: never an instance key, a tenant, an address or anything
// secret.
type Metrics struct {
	reg      *prometheus.Registry
	blocks   []string // sorted: the configuration's on-demand blocks
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	events   *prometheus.CounterVec
	passes   *prometheus.CounterVec
	reaped   *prometheus.CounterVec
	leader   prometheus.Gauge
}

// latencyBuckets span a cache hit (a millisecond or two) to a cold
// provision on a loaded machine (a minute and more), in seconds.
func latencyBuckets() []float64 {
	return []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160}
}

// NewMetrics makes the metrics of one server; blocks are the on-demand
// blocks of the configuration (sandbox.NAME), the only block label
// values besides "other".
func NewMetrics(blocks []string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), blocks: slices.Sorted(slices.Values(blocks))}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandboxer_http_requests_total",
		Help: "HTTP calls answered, by route pattern, status and error code (\"\" on success).",
	}, []string{"route", "status", "code"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandboxer_errors_total",
		Help: "Library calls of the HTTP API that failed, by error code (engine_unreachable: the runtime; internal: anything else, the state backend's failures among them).",
	}, []string{"code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandboxer_request_duration_seconds",
		Help:    "How long an instance request took, by block and how it was answered: reused (a cache hit), provisioned or replaced (cold), pool_claimed (a warm-pool claim).",
		Buckets: latencyBuckets(),
	}, []string{"block", "event"})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandboxer_events_total",
		Help: "Lifecycle events of this process, by block and event type (failed: a request, release or reap step that failed).",
	}, []string{"block", "event"})
	m.passes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandboxer_reap_passes_total",
		Help: "Reap passes this process made as the janitor's leader, by outcome (ok, error).",
	}, []string{"outcome"})
	m.reaped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandboxer_reaped_total",
		Help: "What reap passes removed: expired and unheld instances, orphan resources, unused templates, per-test databases.",
	}, []string{"what"})
	m.leader = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sandboxer_janitor_leader",
		Help: "1 while this process holds the janitor lock and reaps, else 0.",
	})
	m.reg.MustRegister(m.requests, m.errors, m.latency, m.events, m.passes, m.reaped, m.leader,
		// The process's own: memory, CPU, file descriptors, goroutines.
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Emit counts an event and, for the events that answer a request, its
// latency. Pool fills' own provisions (members' keys) are not requests.
func (m *Metrics) Emit(e events.Event) {
	block := m.block(e.Address)
	m.events.WithLabelValues(block, string(e.Event)).Inc()
	switch e.Event {
	case events.Reused, events.Provisioned, events.Replaced, events.PoolClaimed:
		if config.IsPoolKey(e.Key) {
			return
		}
		m.latency.WithLabelValues(block, string(e.Event)).Observe(float64(e.ElapsedMS) / 1000)
	}
}

var _ events.Sink = (*Metrics)(nil)

// ObserveReap counts one janitor pass (the janitor's OnPass).
func (m *Metrics) ObserveReap(rep *sandboxer.ReapReport, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.passes.WithLabelValues(outcome).Inc()
	if rep == nil {
		return
	}
	dbs := 0
	for _, names := range rep.Databases {
		dbs += len(names)
	}
	for what, n := range map[string]int{"expired": len(rep.Expired), "unheld": len(rep.Unheld),
		"orphan": len(rep.Orphans), "template": len(rep.Templates), "database": dbs} {
		m.reaped.WithLabelValues(what).Add(float64(n))
	}
}

// SetJanitorLeader says whether this process leads the janitor.
func (m *Metrics) SetJanitorLeader(leads bool) {
	if leads {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// block is the label of an address: its block when the configuration has
// it, else "other" (an address from a client names anything).
func (m *Metrics) block(addr string) string {
	b, _, _ := strings.Cut(addr, "[")
	if _, ok := slices.BinarySearch(m.blocks, b); ok {
		return b
	}
	return "other"
}

// call counts one answered HTTP call.
func (m *Metrics) call(route string, status int, code api.Code) {
	m.requests.WithLabelValues(route, strconv.Itoa(status), string(code)).Inc()
}

// failed counts a library error by its code.
func (m *Metrics) failed(code api.Code) { m.errors.WithLabelValues(string(code)).Inc() }

// levelsTimeout bounds the state read of one scrape.
const levelsTimeout = 5 * time.Second

// levels reads the instance and pool gauges from the library at scrape
// time: one read of the state, no lock, no engine call.
type levels struct {
	lib                    Library
	instances, ready, size *prometheus.Desc
	up                     *prometheus.Desc
}

func newLevels(lib Library) *levels {
	return &levels{lib: lib,
		instances: prometheus.NewDesc("sandboxer_instances", "Live (unexpired) keyed instances of an on-demand block, pool members not counted.", []string{"block"}, nil),
		ready:     prometheus.NewDesc("sandboxer_pool_ready", "Ready, unclaimed members of a block's warm pool.", []string{"block"}, nil),
		size:      prometheus.NewDesc("sandboxer_pool_size", "The configured size of a block's warm pool.", []string{"block"}, nil),
		up:        prometheus.NewDesc("sandboxer_state_up", "1 when this scrape could read the levels from the state backend, else 0.", nil, nil),
	}
}

func (l *levels) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.instances
	ch <- l.ready
	ch <- l.size
	ch <- l.up
}

func (l *levels) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), levelsTimeout)
	defer cancel()
	lv, err := l.lib.Levels(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(l.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(l.up, prometheus.GaugeValue, 1)
	for _, b := range lv {
		ch <- prometheus.MustNewConstMetric(l.instances, prometheus.GaugeValue, float64(b.Instances), b.Block)
		if b.PoolSize > 0 {
			ch <- prometheus.MustNewConstMetric(l.ready, prometheus.GaugeValue, float64(b.PoolReady), b.Block)
			ch <- prometheus.MustNewConstMetric(l.size, prometheus.GaugeValue, float64(b.PoolSize), b.Block)
		}
	}
}

// ServeMetrics mounts m at GET /metrics, for the operator's token only: a
// tenant's token gets 404, as any route it may not see (and no token,
// 401). m then counts every call. Call it once, before serving.
func (s *Server) ServeMetrics(m *Metrics) {
	s.metrics = m
	m.reg.MustRegister(newLevels(s.lib))
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	s.mux.Handle("GET "+api.PathMetrics, s.authed(func(w http.ResponseWriter, r *http.Request) {
		if sandboxer.TenantOf(r.Context()) != nil {
			writeError(w, http.StatusNotFound, api.CodeNotFound, "no route "+r.URL.Path, nil)
			return
		}
		h.ServeHTTP(w, r)
	}))
}
