package plan

import (
	"time"

	"github.com/sandboxer/sandboxer/config"
)

// Action is what apply will do with one instance.
type Action int

const (
	NoOp             Action = iota // reuse the cached instance
	Create                         // provision a new instance
	CreateThenDelete               // replace: new one first, then remove the old
	Delete                         // remove the instance
	// Forget removes the record only, leaving the instance's containers
	// and data running (a removed block with lifecycle.destroy = false).
	Forget
)

func (a Action) String() string {
	switch a {
	case NoOp:
		return "no-op"
	case Create:
		return "create"
	case CreateThenDelete:
		return "replace"
	case Delete:
		return "delete"
	case Forget:
		return "forget"
	}
	return "unknown"
}

// Reason explains an action. It is for people and tooling only: apply
// decides what to do from the Action alone.
type Reason string

const (
	ReasonNew              Reason = "new"
	ReasonCachedSuperset   Reason = "cached_superset"
	ReasonServiceSuperset  Reason = "service_superset"
	ReasonFeatureSuperset  Reason = "feature_superset"
	ReasonDead             Reason = "dead"
	ReasonExpired          Reason = "expired"
	ReasonReplaceByRequest Reason = "replace_by_request"
	ReasonNoConfig         Reason = "no_config"
	// ReasonNetworkSuperset: the configuration names a user network the
	// cached instance did not join (reach.go).
	ReasonNetworkSuperset Reason = "network_superset"
	// ReasonExposureChanged: the publish address, advertised host or TLS
	// setting differs from the cached instance's.
	ReasonExposureChanged Reason = "exposure_changed"
	// ReasonDatabaseChanged: the configuration names another PostgreSQL
	// database than the cached sandbox's role owns. A rename in place would
	// break every connection string already handed out just the same, so
	// the sandbox is replaced and its credentials rotate.
	ReasonDatabaseChanged Reason = "database_changed"
	// ReasonSeedChanged: the seed the configuration names (SQL files'
	// content, snapshot name) differs from the one the cached sandbox was
	// loaded with. Its data would not be what the seed says, so it is
	// replaced and seeded afresh.
	ReasonSeedChanged Reason = "seed_changed"
	// ReasonRuntimeChanged: the configuration puts the sandbox on another
	// runtime (docker, kubernetes) than the cached one runs on. Nothing
	// moves between runtimes in place, so it is replaced there, new
	// before old, and its credentials rotate.
	ReasonRuntimeChanged Reason = "runtime_changed"
	// ReasonRemoved: a removed block names the sandbox; it is destroyed
	// (Delete) or forgotten (Forget) as the block's lifecycle says.
	ReasonRemoved Reason = "removed"
	// ReasonNone is used for deletes in a destroy plan, which need no reason.
	ReasonNone Reason = ""
)

// Sandbox is the shape of an instance before or after a change: services
// and features, never credentials.
type Sandbox struct {
	Services []string          `json:"services"`
	Features config.FeatureSet `json:"features"`
	// Networks are the user networks the instance joins; omitted when none.
	Networks []string `json:"networks,omitempty"`
	// Exposure is where its ports are published; omitted (nil) for the
	// default, 127.0.0.1 without TLS.
	Exposure *config.Publish `json:"exposure,omitempty"`
	// Images is the image each service runs, service → reference: set on
	// the After of a create or replace (ChooseImages), omitted elsewhere.
	Images map[string]string `json:"images,omitempty"`
	// Generations is the API generation of each feature that has one,
	// service → feature → generation ("redis": {"search": "1"}), as the
	// preflight found it on the images (NoteGenerations); omitted when
	// the images were not inspected or no feature has one.
	Generations map[string]map[string]string `json:"generations,omitempty"`
	// Runtime is where the instance runs; omitted for docker, so plans
	// of Docker sandboxes read as they did before there was another.
	Runtime string `json:"runtime,omitempty"`
}

// RuntimeName is the sandbox's runtime, config.RuntimeDocker when unset.
func (s *Sandbox) RuntimeName() string {
	if s.Runtime == "" {
		return config.RuntimeDocker
	}
	return s.Runtime
}

// runtimeField is what Sandbox.Runtime holds for a runtime.
func runtimeField(runtime string) string {
	if runtime == config.RuntimeDocker {
		return ""
	}
	return runtime
}

// Change is the planned action for one instance.
type Change struct {
	Addr config.Address
	// PrevAddr is where the record was before a moved block took it to
	// Addr ("" when it did not move); apply moves it first.
	PrevAddr string `json:",omitempty"`
	Project  string
	Action   Action
	Reason   Reason
	// Before is the cached instance (nil when there is none or it is dead).
	Before *Sandbox
	// After is what the instance will be (nil for a delete).
	After *Sandbox
	// MissingServices and MissingFeatures say what the cache lacks for a
	// service_superset or feature_superset replace.
	MissingServices []string
	MissingFeatures config.FeatureSet
	// MissingNetworks are the user networks the cache has not joined, for
	// a network_superset replace.
	MissingNetworks []string
	// Requested is what the configuration asks of the instance, to explain
	// a reuse ("cache covers request").
	Requested config.FeatureSet
	// Detail says what refresh saw of a dead instance.
	Detail string
	// TTL is how long a (re)provisioned instance lives; 0 means forever.
	TTL time.Duration
	// PriorGeneration is the generation in state (0 when none).
	PriorGeneration int
	// Evict is set when a dead instance's leftovers must be removed before
	// its replacement is created.
	Evict bool
	// Database is the PostgreSQL database a (re)provisioned instance's
	// role owns ("" means config.DefaultDatabase); PriorDatabase is the
	// cached one's, shown when a change of name forces a replace.
	Database      string `json:",omitempty"`
	PriorDatabase string `json:",omitempty"`
	// Seed is loaded into a (re)provisioned instance; SeedDigest is its
	// digest (recorded in state) and PriorSeedDigest the cached one's.
	Seed            *config.Seed `json:",omitempty"`
	SeedDigest      string       `json:",omitempty"`
	PriorSeedDigest string       `json:",omitempty"`
	// CarryData: the replace copies the old instance's data into the new
	// one before the old one is removed; a failure keeps the old one.
	CarryData bool `json:",omitempty"`
}

// Plan is the full set of changes, sorted by address. It is pure data: no
// I/O happens to build it and apply does not re-decide anything in it.
type Plan struct {
	// Lineage and Serial identify the state the plan was made against.
	Lineage string
	Serial  uint64
	Destroy bool
	Changes []*Change
	// Pools are the configuration's warm pools with their ready members
	// (pools.go); empty when it declares none.
	Pools []PoolSummary
	// Checks are the check blocks' results on this plan, when the
	// caller evaluated them (config.RunChecks, CheckResults).
	Checks []CheckResult
}

// Summary counts changes by kind.
type Summary struct {
	Create  int `json:"create"`
	Replace int `json:"replace"`
	Delete  int `json:"delete"`
	Reuse   int `json:"reuse"`
	// Forget counts records a removed block forgets (not in the JSON
	// summary, whose shape SPEC §5 fixes; the text summary says it).
	Forget int `json:"-"`
}

// Summary counts the plan's changes.
func (p *Plan) Summary() Summary {
	var s Summary
	for _, c := range p.Changes {
		switch c.Action {
		case NoOp:
			s.Reuse++
		case Create:
			s.Create++
		case CreateThenDelete:
			s.Replace++
		case Delete:
			s.Delete++
		case Forget:
			s.Forget++
		}
	}
	return s
}

// Moves counts the changes whose record a moved block moves.
func (p *Plan) Moves() int {
	n := 0
	for _, c := range p.Changes {
		if c.PrevAddr != "" {
			n++
		}
	}
	return n
}

// HasChanges reports whether applying the plan would change anything.
func (p *Plan) HasChanges() bool {
	for _, c := range p.Changes {
		if c.Action != NoOp || c.PrevAddr != "" {
			return true // a move writes state even when the sandbox is reused
		}
	}
	return false
}
