package dashboard

import (
	"slices"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/events"
)

// How much a Recorder keeps: the last MaxEvents events, and the
// latencies of the last LatencyWindow, at most MaxSamples of them (the
// newest; a server answering more than about five requests a second
// shows the latest part of the hour).
const (
	MaxEvents     = 500
	MaxSamples    = 20000
	LatencyWindow = time.Hour
)

// Kind is a latency series of the chart.
type Kind int

// The series: a warm-pool claim (pool_claimed) and a cold start (a
// provisioned or replaced instance). Cache hits (reused) are not drawn.
const (
	Claim Kind = iota
	ColdStart
)

// kindOf is the series an event's latency belongs to.
func kindOf(e events.Event) (Kind, bool) {
	switch e.Event {
	case events.PoolClaimed:
		return Claim, true
	case events.Provisioned, events.Replaced:
		return ColdStart, true
	}
	return 0, false
}

// Recorder is an events.Sink that keeps this process's recent events and
// request latencies in memory, for the dashboard. Several serve replicas
// each keep their own: a replica shows what it did itself. It holds no
// credential because events hold none.
type Recorder struct {
	mu      sync.Mutex
	events  ring[events.Event]
	samples ring[sample]
	started time.Time
}

type sample struct {
	at    time.Time
	ms    int64
	kind  Kind
	owner string
}

// NewRecorder returns an empty recorder started now.
func NewRecorder() *Recorder {
	return &Recorder{events: newRing[events.Event](MaxEvents), samples: newRing[sample](MaxSamples), started: time.Now().UTC()}
}

// Since is when the recorder started: the events and latencies before it
// are not shown.
func (r *Recorder) Since() time.Time { return r.started }

// Emit records e; it never blocks for long.
func (r *Recorder) Emit(e events.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events.add(e)
	if k, ok := kindOf(e); ok && e.ElapsedMS > 0 {
		r.samples.add(sample{at: e.Time, ms: e.ElapsedMS, kind: k, owner: e.Owner})
	}
}

// Events returns up to n of the recorded events that sees keeps (by
// their owner), newest first.
func (r *Recorder) Events(sees func(owner string) bool, n int) []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []events.Event{}
	r.events.newestFirst(func(e events.Event) bool {
		if sees(e.Owner) {
			out = append(out, e)
		}
		return len(out) < n
	})
	return out
}

// Latency summarises the claims and cold starts of the window ending at
// now whose owner sees keeps, per minute.
func (r *Recorder) Latency(sees func(owner string) bool, now time.Time) Latency {
	from := now.Add(-LatencyWindow)
	var per [2][]sample
	r.mu.Lock()
	r.samples.newestFirst(func(s sample) bool {
		// Events of concurrent calls can arrive slightly out of order:
		// look at every sample, not only up to the first old one.
		if !s.at.Before(from) && !s.at.After(now) && sees(s.owner) {
			per[s.kind] = append(per[s.kind], s)
		}
		return true
	})
	r.mu.Unlock()
	return Latency{From: from, To: now, BucketSeconds: int(time.Minute / time.Second),
		Claim: series(per[Claim]), ColdStart: series(per[ColdStart])}
}

// Latency is the chart's data: two series over [From, To].
type Latency struct {
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	BucketSeconds int       `json:"bucket_seconds"`
	Claim         Series    `json:"claim"`
	ColdStart     Series    `json:"cold_start"`
}

// Series is one kind of latency over the window: its figures over all of
// it, and per minute (only minutes with samples, oldest first).
type Series struct {
	Stats
	Buckets []Bucket `json:"buckets"`
}

// Stats are the figures of a set of latencies, in milliseconds
// (nearest-rank percentiles).
type Stats struct {
	Count int   `json:"count"`
	P50   int64 `json:"p50_ms"`
	P95   int64 `json:"p95_ms"`
	Max   int64 `json:"max_ms"`
}

// Bucket is one minute's figures; Start is its first instant.
type Bucket struct {
	Start time.Time `json:"start"`
	Stats
}

// series turns samples into a Series.
func series(ss []sample) Series {
	out := Series{Buckets: []Bucket{}}
	if len(ss) == 0 {
		return out
	}
	all := make([]int64, 0, len(ss))
	for _, s := range ss {
		all = append(all, s.ms)
	}
	out.Stats = stats(all)
	// Oldest first, cut into minutes.
	slices.SortStableFunc(ss, func(a, b sample) int { return a.at.Compare(b.at) })
	for i := 0; i < len(ss); {
		start := ss[i].at.Truncate(time.Minute)
		var ms []int64
		for ; i < len(ss) && ss[i].at.Truncate(time.Minute).Equal(start); i++ {
			ms = append(ms, ss[i].ms)
		}
		out.Buckets = append(out.Buckets, Bucket{Start: start.UTC(), Stats: stats(ms)})
	}
	return out
}

func stats(ms []int64) Stats {
	slices.Sort(ms)
	rank := func(p float64) int64 {
		i := int(p*float64(len(ms))+0.999999) - 1
		return ms[max(0, min(i, len(ms)-1))]
	}
	return Stats{Count: len(ms), P50: rank(0.50), P95: rank(0.95), Max: ms[len(ms)-1]}
}

// ring is a bounded buffer that overwrites its oldest element; it grows
// to its size as elements come.
type ring[T any] struct {
	buf  []T
	next int // the oldest element once full
	size int
}

func newRing[T any](size int) ring[T] { return ring[T]{size: size} }

func (r *ring[T]) add(v T) {
	if len(r.buf) < r.size {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % r.size
}

// newestFirst calls each with the elements, newest first, until it
// returns false.
func (r *ring[T]) newestFirst(each func(T) bool) {
	n := len(r.buf)
	for i := 1; i <= n; i++ {
		if !each(r.buf[(r.next-i+n)%n]) {
			return
		}
	}
}
