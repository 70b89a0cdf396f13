// Package contract holds the shapes services/* packages and the runtimes
// share without importing each other: a runtime's exec and copy into an
// instance (Runner), the instance a service's data mover works on, and
// the mover itself. services.Service is built of them; services/postgres
// and services/redis implement it (package services cannot be imported
// by them: it imports them, to list the catalogue).
//
// What it must never do: anything. It is types only.
package contract

import (
	"context"
	"crypto/tls"
	"io"
	"time"

	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// Runner runs commands in, and copies files into, the container (or pod
// container) of one instance: the runtime's exec and copy. It is all a
// service needs of a runtime to move data.
type Runner interface {
	// Exec runs cmd as user; stdout, when not nil, receives its output.
	Exec(ctx context.Context, user string, cmd []string, stdout io.Writer) error
	// CopyIn puts files into dir: files maps names to local paths,
	// inline names to contents.
	CopyIn(ctx context.Context, dir string, files map[string]string, inline map[string][]byte) error
}

// Instance is one running instance of a service, as its data mover
// needs it.
type Instance struct {
	Run      Runner            // exec and copy into its container
	Creds    state.Credentials // its record's credentials (admin included)
	Features []string          // the instance's features of the service
	Allowed  []string          // the service's feature allowlist
}

// DataMover is snapshot.Engine's three steps for one service of one
// instance. A runtime may run Dump again after a cut exec stream (into a
// rewound file), and Load and Keep likewise: they must be safe to repeat.
type DataMover interface {
	// Dump writes the data in the service's SnapshotFormat.
	Dump(ctx context.Context, w io.Writer) error
	// Keep prepares d so that a later Load of d.Key is fast, without
	// touching the live data (nothing, where loading is fast anyway).
	Keep(ctx context.Context, d snapshot.Data) error
	// Load replaces the live data with d.
	Load(ctx context.Context, d snapshot.Data) error
}

// Prober is a service's liveness probe as a runtime keeps it: it may hold
// a logged-in connection per instance between probes (a repeated probe
// is then a round trip, not a login), still with the handed-out
// credentials. It is safe for concurrent use.
type Prober interface {
	// Ping logs in with c (or uses the connection kept for c) and makes
	// a round trip.
	Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error
	// Forget closes what is kept for c (its instance is being removed).
	Forget(c state.Credentials)
	// Close closes everything kept.
	Close()
}

// Poll is how a runtime waits for a started instance: it calls attempt
// (a real protocol exchange with the handed-out credentials) until it
// succeeds, or gives up (its readiness timeout, a container that exited).
type Poll func(ctx context.Context, attempt func(context.Context) error) error

// Check is what the features of a started instance are checked against.
type Check struct {
	ImageRef string   // the image it runs, for messages
	Runtime  string   // the provider block's label, for hints ("docker", "kubernetes")
	Features []string // the requested features
	Allowed  []string // the service's allowlist
	// Seen are the features an earlier inspection of the image saw work,
	// name → version: a request for one is a replace that works.
	Seen map[string]string
}

// Placement is where a runtime puts what a service starts with, as paths
// in the service's container.
type Placement struct {
	// SecretDir holds Start.Files, read-only.
	SecretDir string
	// TLSCert, TLSKey and TLSCA are the server's TLS files; all "" when
	// the instance has no TLS.
	TLSCert, TLSKey, TLSCA string
	// DataRoot is an empty, writable directory on storage of the
	// service's own, for a service whose Start.NeedsData.
	DataRoot string
}

// StartInput is what a service's start is made from.
type StartInput struct {
	Creds    state.Credentials // the instance's, admin included
	Features []string          // the requested features
	Allowed  []string          // the service's allowlist
	// Modules are the module paths configured for the image
	// (config.Image.Modules); SelfLoaded the features whose module the
	// image loads by itself.
	Modules    map[string]string
	SelfLoaded []string
	// ImageEnv reads the image's environment.
	ImageEnv func(name string) string
}

// Start is what a service's container starts with, beside its image's
// entrypoint.
type Start struct {
	// Files are read-only files for Placement.SecretDir, by name. Their
	// names are the service's own (a runtime may keep every service's
	// files in one secret).
	Files map[string][]byte
	// Mounts put single Files elsewhere too: a path → a name in Files.
	Mounts map[string]string
	Args   []string
	Env    []string // NAME=value
	// Derived are values that are no passwords but have no business in
	// a message either (a SCRAM verifier): the runtime scrubs them.
	Derived []state.Secret
	// EmptyDirs are directories the service's settings name that must
	// exist, empty and read-only, on storage of the instance's own
	// (MySQL's secure_file_priv: nothing to read there, nowhere to
	// write). A runtime mounts an empty read-only file system at each.
	EmptyDirs []string
	// NeedsData: the service keeps its data under Placement.DataRoot.
	NeedsData bool
}

// ModuleLoader is a service whose features are server modules loaded the
// Redis way (--loadmodule at start, MODULE LOAD, INFO modules; the Redis
// protocol, ACL file and users): a runtime finds what an image of it
// provides by starting a throwaway server of the image whose admin may
// MODULE LOAD, and asking it. Redis and Valkey are such services; a
// runtime asks for this interface instead of branching on their names.
type ModuleLoader interface {
	// InspectStart is the throwaway server's start: c's admin the only
	// user that can log in, MODULE LOAD on for it, nothing persisted,
	// files placed in secretDir.
	InspectStart(c state.Credentials, secretDir string) Start
	// FeatureVersion is the version of feature's module among loaded
	// (INFO modules' name → version); false when it is not loaded.
	FeatureVersion(loaded map[string]string, feature string) (string, bool)
	// ModulesHint says how to make a missing module available, for a
	// runtime's provider block label ("docker", "kubernetes").
	ModulesHint(runtime string) string
}

// GenerationDetector is a service some of whose features come in API
// generations (config.Feature.Generations: RediSearch 1.x beside the
// Redis Search 2.x API): it tells which one a module or extension speaks
// from the version the server reports for it, so what an image has is
// detected from the image, never assumed from its name.
type GenerationDetector interface {
	// FeatureGeneration is the API generation of feature at version (as
	// FeatureVersion reports it); "" for a feature with one API or a
	// version it cannot read.
	FeatureGeneration(feature, version string) string
}

// StdinRunner is a Runner that can also feed a command's standard
// input: a command that must end when the runtime is gone (the input's
// end) reads it. The Docker runtime's exec implements it.
type StdinRunner interface {
	Runner
	// ExecStdin runs cmd as user with stdin as its input; stdout, when
	// not nil, receives its output as it comes.
	ExecStdin(ctx context.Context, user string, cmd []string, stdin io.Reader, stdout io.Writer) error
}

// Forker is a service whose running data a runtime can copy at the file
// level from one instant (sandboxer fork): the copies start from the
// captured files and recover as from a crash, so every transaction
// committed before the capture is in them and none after. A runtime asks
// for this interface instead of branching on a service's name.
type Forker interface {
	// ForkSize is how many bytes in's data takes: a copy needs as much,
	// and the capture as much again while it is staged.
	ForkSize(ctx context.Context, in Instance) (int64, error)
	// ForkCapture captures in's data at one instant under stage (a name
	// unique to the fork, letters, digits and '-'), calling during (when
	// not nil) while the data stands still, so the other services of the
	// instance are captured at the same instant. Writers are held at most
	// from that instant until it returns; never after, even when it
	// fails or the runtime goes away.
	ForkCapture(ctx context.Context, in Instance, stage string, during func(context.Context) error) (ForkCopy, error)
	// ForkClean removes what ForkCapture left in the source; safe to
	// repeat.
	ForkClean(ctx context.Context, in Instance, stage string, c ForkCopy) error
	// ForkArgs are what a copy's start adds to its arguments, so that it
	// starts from c's file copied into dir (nil: the runtime starts the
	// copy from the data directory itself, as PostgreSQL's).
	ForkArgs(dir string, c ForkCopy) []string
}

// ForkConnector is a Forker that connects ahead of its capture: a runtime
// calls ForkConnect before the hold of the service captured first, and
// captures with the Forker it returns, whose connection is made (so the
// capture inside that hold is one round trip, not a dial, a TLS handshake
// and an authentication on a loaded host), then calls close.
type ForkConnector interface {
	ForkConnect(ctx context.Context, in Instance) (f Forker, close func(), err error)
}

// ForkCopy is one service's captured data in the source's container.
type ForkCopy struct {
	// Path is the file or directory to copy into each copy's container.
	Path string
	// Method is how it was captured: "reflink" (a clone of the data
	// directory's files), "memory" (a copy within a tmpfs), "copy" (a
	// file copy of the data directory), "rdb" (a fork-time save).
	Method string
	// Held is how long the instance's writers were held.
	Held time.Duration
	// Steps is where the hold's time went, as the capture measured it
	// (e.g. "stop=2ms find=6ms copy=31ms(12files) …"); empty when it
	// could not tell. For figures and debugging only.
	Steps string
}

// ImageFiles reads an image's files without running anything of it: a
// runtime's way in (on Docker, docker cp from a created container; on
// Kubernetes, tar over exec in a pod that runs sleep).
type ImageFiles interface {
	// Read returns a tar stream of path, a directory or a file; an error
	// wrapping fs.ErrNotExist when the image has none.
	Read(ctx context.Context, path string) (io.ReadCloser, error)
}

// FileInspector is a service whose features an image's files tell, read
// without starting it (PostgreSQL's extension control files, MySQL's
// plugin libraries): no server start, so no initialisation. A runtime
// asks for this interface instead of branching on the services' names.
type FileInspector interface {
	// ImageFeatures returns the features of allowed the image ships,
	// name → version ("" where its files say none); env reads the
	// image's environment.
	ImageFeatures(ctx context.Context, files ImageFiles, env func(name string) string, allowed []string) (map[string]string, error)
	// FeaturesHint says how to get a missing feature, for a runtime's
	// provider block label ("docker", "kubernetes").
	FeaturesHint(runtime string) string
}
