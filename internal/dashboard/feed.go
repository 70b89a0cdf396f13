package dashboard

import (
	"context"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/events"
)

// PathFeed is the route of the feed the page polls; it needs the same
// bearer token as every API route.
const PathFeed = "/v1/dashboard"

// FeedEvents is how many of the last events the feed carries.
const FeedEvents = 50

// Library is what the dashboard reads: the on-demand instances (for the
// caller's tenant, when the context carries one) and the warm pools.
// *sandboxer.Sandboxer implements it.
type Library interface {
	Sandboxes(ctx context.Context) (*api.SandboxList, error)
	Pools() []string
	PoolStatus(ctx context.Context, address string) (*api.PoolStatus, error)
}

var _ Library = (*sandboxer.Sandboxer)(nil)

// Dashboard builds the feed from the library and a Recorder.
type Dashboard struct {
	lib Library
	rec *Recorder
	now func() time.Time
}

// New returns the dashboard over lib and the events rec records (rec
// must be among the library's event sinks).
func New(lib Library, rec *Recorder) *Dashboard {
	return &Dashboard{lib: lib, rec: rec, now: func() time.Time { return time.Now().UTC() }}
}

// Feed is GET /v1/dashboard's answer: one caller's view. It holds no
// credential: instances are api.Instance, events events.Event.
type Feed struct {
	// Now is the server's clock, so the page counts TTLs down from it
	// rather than from the browser's.
	Now    time.Time `json:"now"`
	Viewer Viewer    `json:"viewer"`
	// Instances are the on-demand instances the caller may see.
	Instances []api.Instance `json:"instances"`
	// Damaged are records that cannot be read (the operator's only).
	Damaged []api.DamagedRecord `json:"damaged,omitempty"`
	// Pools are the warm pools' levels; the operator's only (nil for a
	// tenant): a pool is shared, so its level moves with other tenants'
	// claims.
	Pools []Pool `json:"pools,omitempty"`
	// Events are the caller's last events in this process, newest first.
	Events []events.Event `json:"events"`
	// Since is when this process started recording events and latencies.
	Since   time.Time `json:"since"`
	Latency Latency   `json:"latency"`
}

// Viewer says whose view a feed is.
type Viewer struct {
	Operator bool   `json:"operator"`
	Tenant   string `json:"tenant,omitempty"`
}

// sees reports whether the viewer may see what owner owns.
func (v Viewer) sees(owner string) bool { return v.Operator || owner == v.Tenant }

// Pool is a warm pool's level.
type Pool struct {
	Address string `json:"address"`
	Size    int    `json:"size"`
	Ready   int    `json:"ready"`
	// Error says why its level could not be read.
	Error string `json:"error,omitempty"`
}

// Build is the feed for the caller ctx acts for (sandboxer.WithTenant; none
// is the operator). Its error comes from the library, classified.
func (d *Dashboard) Build(ctx context.Context) (*Feed, error) {
	v := Viewer{Operator: true}
	if t := sandboxer.TenantOf(ctx); t != nil {
		v = Viewer{Tenant: t.Name}
	}
	list, err := d.lib.Sandboxes(ctx)
	if err != nil {
		return nil, err
	}
	now := d.now()
	f := &Feed{Now: now, Viewer: v, Instances: []api.Instance{}, Since: d.rec.Since()}
	for _, in := range list.Sandboxes {
		// The library lists only the tenant's own; the check keeps that
		// true here even if it did not. An expired instance is shown
		// (as expired) until the janitor reaps it: it still runs.
		if !v.sees(in.Owner) {
			continue
		}
		f.Instances = append(f.Instances, in)
	}
	if v.Operator {
		f.Damaged = list.Damaged
		for _, addr := range d.lib.Pools() {
			p := Pool{Address: addr}
			st, err := d.lib.PoolStatus(ctx, addr)
			if err != nil {
				p.Error = sandboxer.Classify(err).Message
			} else {
				p.Size, p.Ready = st.Size, st.Ready
			}
			f.Pools = append(f.Pools, p)
		}
	}
	f.Events = d.rec.Events(v.sees, FeedEvents)
	f.Latency = d.rec.Latency(v.sees, now)
	return f, nil
}
