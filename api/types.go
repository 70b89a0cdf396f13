package api

import "time"

// Routes of the API.
const (
	PathHealth    = "/healthz"
	PathRequest   = "/v1/request"
	PathRelease   = "/v1/release"
	PathExtend    = "/v1/extend"
	PathSandboxes = "/v1/sandboxes"
	PathSnapshot  = "/v1/snapshot"
	PathRestore   = "/v1/restore"
	PathReset     = "/v1/reset"
	// POST /v1/fork copies a running instance (ForkBody → ForkResult).
	PathFork = "/v1/fork"
	// POST /v1/databases hands out a database per test (DatabaseBody →
	// Sandbox); POST /v1/databases/drop drops one (DropDatabaseBody).
	PathDatabases    = "/v1/databases"
	PathDropDatabase = "/v1/databases/drop"
	// GET /readyz (no token) answers Ready: 200 when the replica can take
	// work, else 503; GET /metrics (the operator's token) is Prometheus
	// text.
	PathReady   = "/readyz"
	PathMetrics = "/metrics"
)

// MaxBody bounds a request body; the server answers 413 above it.
const MaxBody = 64 << 10

// RequestBody is POST /v1/request's body.
type RequestBody struct {
	// Address is sandbox.NAME (then Key is required) or sandbox.NAME["KEY"].
	Address string `json:"address"`
	Key     string `json:"key,omitempty"`
	// Extensions are per-call features, service → features, unioned with
	// the project's standing set and bounded by the allowlist.
	Extensions map[string][]string `json:"extensions,omitempty"`
	// TTL overrides the block's ttl ("" keeps it), e.g. "2h".
	TTL string `json:"ttl,omitempty"`
	// Profile names a profile of the block's project: its services (when
	// it names any) replace the block's, its extensions are added.
	Profile string `json:"profile,omitempty"`
	// Prefix starts the names in the answer's Env ("" keeps the block's
	// env_prefix, else SANDBOXER_), e.g. "ROBOCO_TEST_".
	Prefix string `json:"prefix,omitempty"`
	// ReadyTimeout, e.g. "5m", bounds a provision's wait for each service
	// ("": the server's own, which grows with the machine's load).
	ReadyTimeout string `json:"ready_timeout,omitempty"`
	// CarryData: if the instance must be replaced, its data (every
	// service) is carried into the new one.
	CarryData bool `json:"carry_data,omitempty"`
}

// DataBody is the body of POST /v1/snapshot, /v1/restore and /v1/reset.
// Snapshot is the snapshot's name: required for snapshot and restore;
// for reset, empty means the newest snapshot taken of the instance.
type DataBody struct {
	Address  string `json:"address"`
	Key      string `json:"key,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
}

// DataResult answers a data call.
type DataResult struct {
	Address    string   `json:"address"`
	Generation int      `json:"generation"`
	Snapshot   string   `json:"snapshot"`
	Services   []string `json:"services"`
	Size       int64    `json:"size"`
	ElapsedMS  int64    `json:"elapsed_ms"`
}

// ForkBody is POST /v1/fork's body: the source, how many copies, their
// key prefix and ttl.
type ForkBody struct {
	Address string `json:"address"`
	Key     string `json:"key,omitempty"`
	Count   int    `json:"count"`
	ToKey   string `json:"to_key,omitempty"`
	TTL     string `json:"ttl,omitempty"`
}

// ForkResult is what a fork returns (POST /v1/fork, `fork --json`): the
// copies, each with its own credentials, and how the data was copied.
type ForkResult struct {
	Source    string    `json:"source"`
	Sandboxes []Sandbox `json:"sandboxes"`
	// Methods is how each service's data was captured, service →
	// "reflink", "memory", "copy" (PostgreSQL's data directory) or
	// "rdb" (Redis's and Valkey's fork-time save), then, after a "+",
	// how the copies got it where the runtime says: "overlay" (one copy
	// shared under an overlay each), "volume" (copied volume to volume),
	// "stream" (streamed into each copy).
	Methods map[string]string `json:"methods"`
	// Bytes is the size of the source's data, every service together.
	Bytes int64 `json:"bytes"`
	// HeldMS is how long the source's writers were held.
	HeldMS    int64 `json:"held_ms"`
	ElapsedMS int64 `json:"elapsed_ms"`
}

// ReleaseBody is POST /v1/release's body.
type ReleaseBody struct {
	Address string `json:"address"`
	Key     string `json:"key,omitempty"`
}

// ExtendBody is POST /v1/extend's body.
type ExtendBody struct {
	Address string `json:"address"`
	Key     string `json:"key,omitempty"`
	TTL     string `json:"ttl"`
}

// Sandbox is what a request returns (POST /v1/request, `request --json`):
// one instance with its credentials in Env.
type Sandbox struct {
	Address string `json:"address"`
	Reused  bool   `json:"reused"`
	// FromPool: the instance was a warm-pool member, claimed with fresh
	// credentials (omitted when false).
	FromPool            bool                `json:"from_pool,omitempty"`
	Generation          int                 `json:"generation"`
	Services            []string            `json:"services"`
	Features            map[string][]string `json:"features"`
	AvailableExtensions map[string][]string `json:"available_extensions"`
	// ExtensionVersions maps a service to each available extension's
	// version (RediSearch 1.2.0 and 2.x take different commands). A
	// sibling of available_extensions, which keeps its list shape.
	ExtensionVersions map[string]map[string]string `json:"extension_versions"`
	// ExtensionGenerations maps a service to the API generation of each
	// available extension that has one ("search": "1" for RediSearch
	// 1.2, "2" for the Redis Search 2.x API), detected from the version
	// its server reported; omitted when none has one. A request asks for
	// one as "search@2" (docs/features.md).
	ExtensionGenerations map[string]map[string]string `json:"extension_generations,omitempty"`
	// Env maps <PREFIX><SERVICE>_{URL,HOST,PORT,USER,PASSWORD,DB} to
	// their values (PREFIX: the request's, else the block's env_prefix,
	// else SANDBOXER_). It holds secrets.
	Env map[string]string `json:"env"`
	// CA holds, per service that speaks TLS, the PEM of the sandbox's own
	// CA: Env's SANDBOXER_<SVC>_CA names a file on the machine that ran
	// sandboxer, which a client elsewhere cannot read.
	CA map[string]string `json:"ca,omitempty"`
	// ExpiresAt is nil for an instance without a ttl.
	ExpiresAt *time.Time `json:"expires_at"`
}

// Instance is one instance without credentials: an element of GET
// /v1/sandboxes, POST /v1/extend's answer and `show --json`'s sandboxes.
type Instance struct {
	Address string `json:"address"`
	// Owner is the tenant the instance belongs to; empty for the
	// operator's.
	Owner string `json:"owner,omitempty"`
	// Runtime is where it runs: docker or kubernetes.
	Runtime             string              `json:"runtime"`
	Project             string              `json:"project"`
	Services            []string            `json:"services"`
	Features            map[string][]string `json:"features"`
	AvailableExtensions map[string][]string `json:"available_extensions"`
	// ExtensionVersions maps a service to each available extension's
	// version (RediSearch 1.2.0 and 2.x take different commands). A
	// sibling of available_extensions, which keeps its list shape.
	ExtensionVersions map[string]map[string]string `json:"extension_versions"`
	// ExtensionGenerations maps a service to the API generation of each
	// available extension that has one ("search": "1" for RediSearch
	// 1.2, "2" for the Redis Search 2.x API), detected from the version
	// its server reported; omitted when none has one. A request asks for
	// one as "search@2" (docs/features.md).
	ExtensionGenerations map[string]map[string]string `json:"extension_generations,omitempty"`
	// Endpoints maps a service to host:port.
	Endpoints  map[string]string `json:"endpoints"`
	Generation int               `json:"generation"`
	CreatedAt  time.Time         `json:"created_at"`
	ExpiresAt  *time.Time        `json:"expires_at"`
	OnDemand   bool              `json:"on_demand"`
	// Networks are the user networks it joined, NetworkEndpoints maps a
	// service to its name:port there, and Exposure says where its ports
	// are published; all omitted for loopback without user networks.
	Networks         []string          `json:"networks,omitempty"`
	NetworkEndpoints map[string]string `json:"network_endpoints,omitempty"`
	Exposure         string            `json:"exposure,omitempty"`
}

// ReleaseResult is POST /v1/release's answer. Released is false when
// there was nothing to release.
type ReleaseResult struct {
	Released bool `json:"released"`
}

// SandboxList is GET /v1/sandboxes's answer.
type SandboxList struct {
	Sandboxes []Instance `json:"sandboxes"`
	// Damaged are the records the state holds but cannot read: listed
	// beside the rest (which stay usable), each with what to do about it.
	Damaged []DamagedRecord `json:"damaged,omitempty"`
}

// DamagedRecord is one state record that cannot be read.
type DamagedRecord struct {
	Address string `json:"address"`
	Error   string `json:"error"`
}

// Health is GET /healthz's answer.
type Health struct {
	Status string `json:"status"`
}

// Ready is GET /readyz's body: Status "ready" or "unready", and the
// failed checks ("state", "runtime docker", "shutdown"), each with a
// code, never an error's text (the route is open).
type Ready struct {
	Status string      `json:"status"`
	Failed []ReadyFail `json:"failed,omitempty"`
}

// ReadyFail is one failed readiness check.
type ReadyFail struct {
	Check string `json:"check"`
	Code  Code   `json:"code,omitempty"`
}

// ErrorBody is the body of every non-2xx answer.
type ErrorBody struct {
	Error string `json:"error"`
	// Code classifies the refusal; see the Code constants.
	Code Code `json:"code,omitempty"`
	// Allowed is the allowlist (or opted-in set) a not_allowed refusal
	// was checked against.
	Allowed []string `json:"allowed,omitempty"`
}

// FeatureList is what a configuration's services may enable and what its
// images provide: the MCP tool list_features's answer.
type FeatureList struct {
	Services []ServiceFeatures `json:"services"`
}

// ServiceFeatures is one service's allowlist beside what its image has.
type ServiceFeatures struct {
	Service string `json:"service"`
	// Allowed is the allowlist: every feature a request may name.
	Allowed []string `json:"allowed"`
	// Image is the image the service runs; Provided maps each allowed
	// feature it provides to its version ("" when the image does not
	// say). A feature allowed but not provided needs another image.
	Image    string            `json:"image,omitempty"`
	Provided map[string]string `json:"provided"`
	// Generations maps each provided feature that comes in API
	// generations to the one the image has ("search": "1" for RediSearch
	// 1.2), detected from the module's reported version; Generable lists
	// the generations the allowlist has for each such feature, which a
	// request may ask for as "feature@generation".
	Generations map[string]string   `json:"generations,omitempty"`
	Generable   map[string][]string `json:"generable,omitempty"`
	// Error says why the image could not be inspected (missing, engine
	// unreachable); Provided is then empty.
	Error string `json:"error,omitempty"`
}

// DatabaseBody is POST /v1/databases's body: a fresh database (the
// block's PostgreSQL or MySQL) made from the template SQL makes (once
// per content), inside the kept host instance of the on-demand block
// Address.
type DatabaseBody struct {
	Address  string   `json:"address"`
	SQL      []string `json:"sql,omitempty"`
	CreateDB bool     `json:"createdb,omitempty"`
	TTL      string   `json:"ttl,omitempty"`
	Prefix   string   `json:"prefix,omitempty"`
}

// DropDatabaseBody is POST /v1/databases/drop's body; Name is the
// database's name (its env's …_POSTGRES_DB or …_MYSQL_DB).
type DropDatabaseBody struct {
	Address string `json:"address"`
	Name    string `json:"name"`
}

// DropDatabaseResult answers POST /v1/databases/drop.
type DropDatabaseResult struct {
	Dropped bool `json:"dropped"`
}

// PoolStatus is a warm pool's state: `sandboxer pool status --json`,
// GET /v1/pools and the library's PoolStatus.
type PoolStatus struct {
	// Address is the pooled block, sandbox.NAME.
	Address string `json:"address"`
	Size    int    `json:"size"`
	// Ready counts unclaimed, unexpired members.
	Ready int `json:"ready"`
	// Members are their addresses, sorted.
	Members []string `json:"members"`
	// Filled and Drained count members made or removed by this call.
	Filled  int `json:"filled,omitempty"`
	Drained int `json:"drained,omitempty"`
}
