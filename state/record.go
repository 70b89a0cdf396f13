package state

import (
	"errors"
	"sort"
	"time"
)

// SchemaVersion is the version of the record layout this build writes.
// Version 2 added SeedDigest, version 3 Reach and the network and TLS
// fields of Credentials (see upgradeV2ToV3).
const SchemaVersion = 3

// Record is one provisioned sandbox instance as kept in state.
type Record struct {
	Address  string `json:"address"`
	Project  string `json:"project"`
	OnDemand bool   `json:"on_demand,omitempty"`
	// Services are the provisioned services, sorted.
	Services []string `json:"services"`
	// Features are the provisioned features per service, sorted.
	Features map[string][]string `json:"features"`
	// AvailableExtensions are what the engine reported it could enable,
	// intersected with the allowlist, per service.
	AvailableExtensions map[string][]string `json:"available_extensions,omitempty"`
	// ExtensionVersions holds, per service, the version of each available
	// extension or module (RediSearch 1.2.0 and 2.x differ in commands).
	ExtensionVersions map[string]map[string]string `json:"extension_versions,omitempty"`
	// Credentials per service; the only place besides env/output that holds
	// secrets.
	Credentials map[string]Credentials `json:"credentials,omitempty"`
	Resources   Resources              `json:"resources"`
	// Reach is how the instance can be reached: the user networks it
	// joined and where its ports are published.
	Reach     Reach     `json:"reach"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is zero when the instance never expires.
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	Generation int       `json:"generation"`
	// SeedDigest identifies the seed data loaded at provision (SQL files
	// and/or a snapshot, see config.Seed); empty when none. Added in
	// schema version 2.
	SeedDigest string `json:"seed_digest,omitempty"`
	// LabelAddress is the address the instance's engine resources are
	// labelled with when that is not Address: a warm-pool member claimed
	// by a request moves to the caller's address, and engine labels
	// cannot change. Empty means Address. See ResourceAddress.
	LabelAddress string `json:"label_address,omitempty"`
	// Owner is the tenant that requested the instance (serve --tenants,
	// --tenant); empty for the operator's. A tenant sees only its own.
	Owner string `json:"owner,omitempty"`
}

// ResourceAddress is the address the record's engine resources carry in
// their labels: LabelAddress when set, else Address.
func (r *Record) ResourceAddress() string {
	if r.LabelAddress != "" {
		return r.LabelAddress
	}
	return r.Address
}

// Credentials are what a client needs to reach one service.
type Credentials struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user"`
	Password Secret `json:"password"`
	Database string `json:"database,omitempty"`
	// Admin credentials are used by sandboxer itself (creating extensions,
	// probing) and are never exported.
	AdminUser     string `json:"admin_user,omitempty"`
	AdminPassword Secret `json:"admin_password,omitempty"`
	// NetworkHost and NetworkPort are the endpoint on the instance's user
	// networks (the container's DNS name there and the container port);
	// empty when it joined none.
	NetworkHost string `json:"network_host,omitempty"`
	NetworkPort int    `json:"network_port,omitempty"`
	// CA is the PEM certificate of the instance's own CA when the service
	// speaks TLS, and CAFile where a copy of it was written for clients
	// (sslrootcert, --cacert). Neither is secret.
	CA     string `json:"ca,omitempty"`
	CAFile string `json:"ca_file,omitempty"`
}

// Reach is how an instance can be reached besides its credentials.
type Reach struct {
	// Networks are the user networks the containers joined, sorted.
	Networks []string `json:"networks,omitempty"`
	// PublishAddress is the host IP ports are bound on, AdvertiseHost the
	// host handed-out URLs name, TLS whether both services require TLS.
	// Empty addresses mean 127.0.0.1 (records made before they existed).
	PublishAddress string `json:"publish_address,omitempty"`
	AdvertiseHost  string `json:"advertise_host,omitempty"`
	TLS            bool   `json:"tls,omitempty"`
}

// Resources identify what the provider created, so it can be found again;
// labels on the resources remain the source of truth after a crash.
type Resources struct {
	// Runtime is where the instance runs: RuntimeDocker ("" in records
	// made before there was another) or RuntimeKubernetes.
	Runtime    string            `json:"runtime,omitempty"`
	Network    string            `json:"network,omitempty"`
	Containers map[string]string `json:"containers,omitempty"` // service → container id (Kubernetes: container name)
	Volumes    []string          `json:"volumes,omitempty"`
	// Namespace and Pod name a Kubernetes instance's pod; the instance's
	// Secret, Service and NetworkPolicy carry the pod's name.
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	// Owned lists, for a Kubernetes instance, the objects of its own by
	// kind ("pod", "secret") and the UID each was created with, so a
	// delete removes exactly those, with no read first. Records made
	// before it existed leave it empty: their instance owns a pod, a
	// Secret, a Service and a NetworkPolicy, all of the pod's name.
	Owned map[string]string `json:"owned,omitempty"`
}

// Runtimes an instance can run on (Resources.Runtime).
const (
	RuntimeDocker     = "docker"
	RuntimeKubernetes = "kubernetes"
)

// RuntimeOf is the runtime the record's instance runs on.
func (r *Record) RuntimeOf() string {
	if r.Resources.Runtime == "" {
		return RuntimeDocker
	}
	return r.Resources.Runtime
}

// Secret is a string that never prints itself: fmt verbs and error wrapping
// show "(sensitive)". Reveal is the one way to read it.
type Secret string

func (s Secret) String() string   { return "(sensitive)" }
func (s Secret) GoString() string { return `"(sensitive)"` }

// Reveal returns the secret value, for env/output and the provider only.
func (s Secret) Reveal() string { return string(s) }

// Snapshot is the whole state as read in one transaction.
type Snapshot struct {
	Lineage string
	Serial  uint64
	Records map[string]*Record // by address
	// Damaged are the records that could not be read, by address: each
	// error is a *CorruptError or *FutureSchemaError naming the record and
	// saying how to get out. Only Store.Inspect returns a Snapshot with
	// any; they are not in Records.
	Damaged map[string]error
}

// DamagedError joins the errors of the damaged records, sorted by
// address; nil when there are none.
func (s *Snapshot) DamagedError() error {
	addrs := make([]string, 0, len(s.Damaged))
	for a := range s.Damaged {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	errs := make([]error, 0, len(addrs))
	for _, a := range addrs {
		errs = append(errs, s.Damaged[a])
	}
	return errors.Join(errs...)
}
