package events

import "time"

// Type names a lifecycle transition.
type Type string

// The transitions an on-demand sandbox goes through.
const (
	Provisioned Type = "provisioned"  // a new instance (first request, or a dead one healed)
	Reused      Type = "reused"       // a cache hit, probed alive
	Replaced    Type = "replaced"     // re-provisioned with a superset, credentials rotated
	Released    Type = "released"     // given back by its user
	Extended    Type = "extended"     // its TTL pushed out
	Expired     Type = "expired"      // destroyed by reap after its TTL ran out
	Reaped      Type = "reaped"       // orphaned resources removed by reap
	Failed      Type = "failed"       // a request, release or reap step failed
	Snapshotted Type = "snapshotted"  // its data saved as a snapshot (Reason: the name)
	Restored    Type = "restored"     // its data replaced from a snapshot (Reason: the name, or "reset NAME")
	PoolClaimed Type = "pool_claimed" // a warm-pool member handed to a request (Address: the caller's; Reason: the member's key)
	PoolFilled  Type = "pool_filled"  // a warm-pool member made ready (Address: the member's; Reason: "ready N/SIZE")
)

// Event is one transition. It never holds credentials.
type Event struct {
	Time       time.Time `json:"time"`
	Event      Type      `json:"event"`
	Address    string    `json:"address"`
	Key        string    `json:"key,omitempty"`
	Generation int       `json:"generation,omitempty"`
	// Reason says why: the plan reason (new, dead, feature_superset, …),
	// "orphan", or a failure's message (providers scrub secrets from it).
	Reason string `json:"reason,omitempty"`
	// Replica names the serve process that emitted it, when several share
	// one state (serve --replica); empty otherwise.
	Replica string `json:"replica,omitempty"`
	// Owner is the tenant the instance belongs to; empty for the
	// operator's.
	Owner string `json:"owner,omitempty"`
	// ElapsedMS is how long the request took, from its start to this
	// event, on the events that answer one (reused, provisioned,
	// replaced, pool_claimed): the latency metrics and the dashboard's
	// chart read it.
	ElapsedMS int64 `json:"elapsed_ms,omitempty"`
}

// Stamp returns a sink that sets Replica on every event to name before
// passing it to s.
func Stamp(s Sink, name string) Sink { return stamped{s: s, name: name} }

type stamped struct {
	s    Sink
	name string
}

func (st stamped) Emit(e Event) {
	if e.Replica == "" {
		e.Replica = st.name
	}
	st.s.Emit(e)
}

// Sink receives events. Emit must not block for long and must be safe for
// concurrent use.
type Sink interface {
	Emit(Event)
}

// Discard drops every event.
type Discard struct{}

// Emit does nothing.
func (Discard) Emit(Event) {}

// Multi sends every event to each of its sinks, in order.
type Multi []Sink

// Emit forwards e.
func (m Multi) Emit(e Event) {
	for _, s := range m {
		s.Emit(e)
	}
}
