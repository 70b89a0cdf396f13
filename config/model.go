package config

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Config is a fully decoded and validated configuration directory. When
// Load reports errors only Dir, Sources and Files are dependable.
type Config struct {
	Dir     string
	Sources map[string][]byte // file name (relative to Dir) → bytes, for diagnostics and saved plans
	// Files holds every parsed file by the name its ranges use: the
	// configuration files (as in Sources) and any --var-file, for
	// hcl.NewDiagnosticTextWriter. Populated even when loading failed.
	Files     map[string]*hcl.File
	Variables map[string]*Variable
	Locals    map[string]cty.Value // local values by name
	// Provider is the docker provider block, Kubernetes the kubernetes
	// one, each with defaults applied and always set; an instance runs on
	// the one its Runtime names (ProviderFor).
	Provider   *Provider
	Kubernetes *Provider
	// DefaultRuntime is where an instance runs when neither its sandbox
	// nor its project names a runtime (kubernetes.go).
	DefaultRuntime string
	Projects       map[string]*Project
	Sandboxes      map[string]*Sandbox // blocks by name
	Instances      []*Instance         // expanded instances, sorted by address
	Outputs        []*Output           // sorted by name
	// NetworkRefs are the user networks named in provider and sandbox
	// blocks, each where it is written, for the plan-time existence check.
	NetworkRefs []NetworkRef
	// Moves and Removes are the moved and removed blocks (moved.go), in
	// the order they are written.
	Moves   []*Move
	Removes []*Removed
	// Checks are the check blocks (check.go), evaluated after a plan.
	Checks []*Check
	// Backend is the sandboxer block's backend (backend.go), nil if none.
	Backend *BackendDecl
}

// Instance returns the desired instance with the given address.
func (c *Config) Instance(addr Address) (*Instance, bool) {
	for _, in := range c.Instances {
		if in.Addr == addr {
			return in, true
		}
	}
	return nil, false
}

// Variable is a declared input variable with its final value.
type Variable struct {
	Name        string
	Description string
	Sensitive   bool
	Value       cty.Value
	DeclRange   hcl.Range
}

// Provider is the docker provider block with defaults applied.
type Provider struct {
	// Runtime is the block's label: RuntimeDocker or RuntimeKubernetes.
	Runtime string
	Host    string // empty: DOCKER_HOST or the local socket
	// ReadyTimeout is the base of how long a provision waits for each
	// service to answer (ready_timeout; 0: the runtime's default); the
	// Docker runtime scales it with the machine's load.
	ReadyTimeout time.Duration
	Images       map[string]Image // service → image; every catalog service present (Default when not configured)
	MemoryMB     int64            // per container memory limit
	PidsLimit    int64            // per container pids limit
	// Networks are user networks every sandbox joins, sorted.
	Networks []string
	// Publish is where ports are published and how URLs name the host.
	Publish Publish
	// Storage is where PostgreSQL keeps its data: StorageVolume or
	// StorageTmpfs.
	Storage string
	// NoTemplate turns PostgreSQL data-directory templates off (docker
	// provider: template = false): every sandbox runs initdb itself, as
	// before issue 31. For comparison and as an escape hatch.
	NoTemplate bool
	// Kubernetes only (kubernetes.go): the kubeconfig file ("": KUBECONFIG,
	// then ~/.kube/config, then the in-cluster config), its context (""
	// its current one) and the namespace sandboxes go in ("": the
	// context's, else the pod's own in the cluster, else "default").
	Kubeconfig string
	Context    string
	Namespace  string
	// QPS and Burst are the client-side rate limit of the kubernetes
	// runtime's API client (qps, burst; DefaultKubeQPS and DefaultKubeBurst
	// when not set).
	QPS   int64
	Burst int64
	// Endpoint is how the handed-out host URLs reach a Kubernetes
	// sandbox: EndpointPodIP, EndpointPortForward or EndpointAuto
	// (DefaultEndpoint when not set; kubernetes.go).
	Endpoint  string
	DeclRange hcl.Range
}

// Image is the image for one service and, for redis, where each feature's
// module lives inside it.
type Image struct {
	Ref string
	// Default is set when no image block names the service: Ref is then
	// its bare default, and Provider.ImageFor picks the default image by
	// the features a sandbox asks for (images.go).
	Default bool
	// Modules maps a feature to the module file to load with --loadmodule.
	// A feature absent here is expected to be built into the image.
	Modules map[string]string
}

// Project is an opted-in service set and its standing feature set.
type Project struct {
	Name       string
	Services   []string   // sorted
	Extensions FeatureSet // standing set, keyed by opted services only
	// Database and EnvPrefix are the project's defaults for its sandboxes
	// ("" when not set).
	Database  string
	EnvPrefix string
	// Seed is the default seed of the project's sandboxes (nil: none).
	Seed *Seed
	// Profiles are named presets a request can ask for, by name.
	Profiles map[string]*Profile
	// Runtime is where the project's sandboxes run unless they say
	// otherwise ("" when not set; kubernetes.go).
	Runtime   string
	DeclRange hcl.Range
}

// Sandbox is one sandbox block before for_each expansion.
type Sandbox struct {
	Name     string
	Project  string
	OnDemand bool
	ForEach  bool
	// TTL is the lifetime of the block's instances, 0 for never. With
	// for_each the TTL may depend on each.key; when instances differ it is
	// 0 here and only Instance.TTL is exact.
	TTL time.Duration
	// Pool is the block's warm pool (pool.go); nil when it has none.
	Pool      *Pool
	DeclRange hcl.Range
}

// Instance is one desired sandbox instance after for_each expansion. An
// on_demand block yields one template instance at its block address
// (sandbox.NAME, OnDemand set); `request` provisions sandbox.NAME["KEY"]
// from it.
type Instance struct {
	Addr    Address
	Project string
	// Services are the services this instance asks for, sorted.
	Services []string
	// Features are the requested features of Services: the project's
	// standing set ∪ the sandbox override, bounded by the allowlist.
	Features FeatureSet
	// Provision is what a first provision gets: the project's full opted-in
	// service set with standing ∪ override features.
	Provision FeatureSet
	TTL       time.Duration
	OnDemand  bool
	// Networks are the user networks the instance joins (provider's and
	// its block's), sorted; Publish is the provider's exposure.
	Networks []string
	Publish  Publish
	// Database is the PostgreSQL database the handed-out role owns:
	// sandbox's, else project's; "" means DefaultDatabase (DatabaseName).
	Database string
	// EnvPrefix starts the names env and request print: sandbox's, else
	// project's; "" means DefaultEnvPrefix.
	EnvPrefix string
	// Seed is loaded at provision: the sandbox's, else the project's.
	Seed *Seed
	// CarryData: a replace of a live instance copies its data into the
	// new one before the old one goes (carry_data = true).
	CarryData bool
	// Runtime is where the instance runs: RuntimeDocker or
	// RuntimeKubernetes (the sandbox's runtime, else its project's, else
	// the configuration's default, see kubernetes.go).
	Runtime   string
	DeclRange hcl.Range
}

// DatabaseName is the database the instance's postgres role owns.
func (in *Instance) DatabaseName() string { return or(in.Database, DefaultDatabase) }

// Output is a declared output. Its value depends on provisioned sandboxes,
// so it is evaluated later against state.
type Output struct {
	Name        string
	Description string
	Sensitive   bool
	Expr        hcl.Expression
	DeclRange   hcl.Range
}

// Input carries everything from outside the files that shapes a config:
// flags and environment, in one place so nothing reads globals.
type Input struct {
	// Vars are --var name=value flags in command-line order.
	Vars []string
	// VarFiles are --var-file paths in command-line order.
	VarFiles []string
	// Args are --var and --var-file together, in command-line order, as
	// Terraform applies them (a later one wins). When set, Vars and
	// VarFiles are ignored.
	Args []VarArg
	// Environ is the process environment (os.Environ form); SBX_VAR_name
	// entries set variables.
	Environ []string
	// Values are set last, over everything above: the variables of a
	// test file and of its run blocks (sandboxer test).
	Values []VarValue
}

// VarValue is a variable's value written in HCL elsewhere (a test
// file), with where it is written.
type VarValue struct {
	Name  string
	Value cty.Value
	Range hcl.Range
}

// VarArg is one --var NAME=VALUE (File false) or --var-file PATH (File true).
type VarArg struct {
	File  bool
	Value string
}

// Runtimes a provider block can name.
const (
	RuntimeDocker     = "docker"
	RuntimeKubernetes = "kubernetes"
)

// ProviderFor is the provider block of a runtime.
func (c *Config) ProviderFor(runtime string) *Provider {
	if runtime == RuntimeKubernetes {
		return c.Kubernetes
	}
	return c.Provider
}
