package sandboxer

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// Options configure Open. The zero value works: state under the
// configuration directory, the Docker provider the configuration
// describes, variables from defaults and SBX_VAR_* in the environment.
type Options struct {
	// StatePath is the state file; default DIR/.sandboxer/state.db, the
	// CLI's default, so the CLI and the library share sandboxes. A
	// relative path is taken relative to DIR, as the CLI's --state.
	StatePath string
	// Backend holds the state instead of the file at StatePath (e.g. a
	// pgstate.Backend); snapshots still live next to StatePath.
	Backend state.Backend
	// Vars set variables, as --var NAME=VALUE; they win over VarFiles.
	Vars map[string]string
	// VarFiles are read in order, as --var-file (relative to DIR).
	VarFiles []string
	// VarArgs are --var and --var-file in command-line order (paths as
	// given, relative to the working directory), applied after Vars and
	// VarFiles: a front end that keeps its command line's order.
	VarArgs []config.VarArg
	// Environ is the environment SBX_VAR_* variables (and the state key,
	// SANDBOXER_STATE_KEY and the others of state.KeyringFromEnv) are read from;
	// nil means os.Environ().
	Environ []string
	// Provider, when set, is used instead of the configured engine (for
	// example providers/fake for tests without Docker). Close does not
	// close it.
	Provider apply.Provider
	// NewProvider connects the configured engine on first use; nil means
	// the runtime the provider block names (compose.go), set up with the
	// provider settings below.
	NewProvider func(ctx context.Context, cfg *config.Provider, cat *config.Catalog) (apply.Provider, error)
	// Catalog is the feature allowlist; nil means config.DefaultCatalog().
	Catalog *config.Catalog
	// Events hears lifecycle events of on-demand calls; nil discards.
	Events events.Sink
	// LockTimeout bounds waiting for a lock another command holds: the
	// instance lock of on-demand calls (default ondemand's, 5 min) and the
	// state lock of Plan and Apply (default 0: fail at once).
	LockTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// Settings of the provider the library connects (not of one passed
	// in as Provider).

	// CADir is where the CA files of TLS sandboxes are written for their
	// clients; default "ca" beside the state file.
	CADir string
	// CacheDir keeps what each image provides, by image id, across runs;
	// default SANDBOXER_CACHE_DIR, else sandboxer under the user's cache
	// directory. NoCache keeps it in memory for the process only.
	CacheDir string
	NoCache  bool
	// ReadyTimeout bounds how long a create waits for each service to
	// answer its probe; default SANDBOXER_READY_TIMEOUT (a Go duration),
	// else the provider block's ready_timeout, else the provider's (60 s).
	// The Docker runtime scales it with the machine's load.
	ReadyTimeout time.Duration
	// PullProgress, when set, receives image pull progress at plan time.
	PullProgress io.Writer
	// Forward says the process hands out URLs for as long as it runs
	// (serve, mcp): Request answers with local ports forwarded to a
	// sandbox whose runtime forwards it (forward.go), valid while the
	// process runs.
	Forward bool

	// Defaults of Apply, PlanAndApply, Destroy and ApplyFile.

	// Parallelism bounds concurrent changes; default DefaultParallelism.
	Parallelism int
	// Hook hears apply progress; nil ignores it.
	Hook apply.Hook
	// ProgressEvery is how often Hook.Progress fires for a running change
	// (0: never).
	ProgressEvery time.Duration
	// Interrupt, when it closes, stops an apply from starting new changes;
	// those in flight finish (cancel the context to abandon them).
	Interrupt <-chan struct{}
}

// DefaultLockTimeout is how long on-demand calls wait for an instance
// lock another command holds unless Options.LockTimeout says otherwise
// (the CLI's --lock-timeout default).
const DefaultLockTimeout = ondemand.DefaultLockTimeout

// DefaultParallelism is how many changes an apply makes at once unless
// told otherwise: `sandboxer apply`'s default.
const DefaultParallelism = 4

func (s *Sandboxer) parallelism(override int) int {
	switch {
	case override > 0:
		return override
	case s.opts.Parallelism > 0:
		return s.opts.Parallelism
	}
	return DefaultParallelism
}

// Sandboxer is one opened configuration with its state. It is safe for
// concurrent use; coordination with other processes goes through the
// state file's locks, as for the CLI.
type Sandboxer struct {
	dir       string
	cfg       *config.Config
	cat       *config.Catalog
	store     state.Backend
	statePath string
	prov      *lazyProvider
	opts      Options
	dbs       databaseHosts // testdatabases.go
	pools     *poolKeeper   // pools.go
}

// Open decodes the configuration in dir (every *.sbx.hcl directly in it).
// A configuration with errors is a *ConfigError. The engine is contacted
// only when a call needs it.
func Open(ctx context.Context, dir string, opts Options) (*Sandboxer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cat := opts.Catalog
	if cat == nil {
		cat = config.DefaultCatalog()
	}
	cfg, diags := config.Load(dir, opts.input(dir), cat)
	if diags.HasErrors() {
		var files map[string]*hcl.File
		if cfg != nil {
			files = cfg.Files
		}
		return nil, &ConfigError{Diagnostics: diags, Files: files}
	}
	return FromConfig(dir, cfg, opts), nil
}

// FromConfig wraps an already decoded configuration (the CLI decodes it
// itself to render diagnostics). dir is the configuration directory.
func FromConfig(dir string, cfg *config.Config, opts Options) *Sandboxer {
	cat := opts.Catalog
	if cat == nil {
		cat = config.DefaultCatalog()
	}
	// The one resolution of the backend (statebackend.go), as the CLI's:
	// SANDBOXER_BACKEND_URL, else the configuration's backend block,
	// else the state file (StatePath, else the block's path, else the
	// default). Options.Backend, when set, is the state instead; the
	// choice still says where snapshots and CA files go.
	getenv := func(k string) string { return lookupEnv(opts.environ(), k) }
	in := BackendInput{Dir: dir, StatePath: opts.StatePath, Getenv: getenv, Opened: opts.Backend != nil}
	if cfg != nil {
		in.Decl = cfg.Backend
	}
	choice, err := ChooseBackend(in)
	statePath := choice.StatePath
	opts.StatePath = statePath
	store := opts.Backend
	if store == nil {
		store = openBackend(choice, getenv)
		if err != nil {
			store = state.Failing(err)
		}
	}
	s := &Sandboxer{dir: dir, cfg: cfg, cat: cat, store: store, statePath: statePath, opts: opts, pools: newPoolKeeper()}
	var rs runtimeSettings
	if cfg != nil { // nil: only a saved plan's ApplyFile, which brings its own
		rs = settingsOf(cfg)
	}
	s.prov = s.providerFor(rs)
	return s
}

// input turns the options' variables into config.Input, files first so
// that Vars win (Terraform's precedence for -var-file then -var).
func (o Options) input(dir string) config.Input {
	var args []config.VarArg
	for _, f := range o.VarFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		args = append(args, config.VarArg{File: true, Value: f})
	}
	names := make([]string, 0, len(o.Vars))
	for n := range o.Vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		args = append(args, config.VarArg{Value: n + "=" + o.Vars[n]})
	}
	args = append(args, o.VarArgs...)
	env := o.Environ
	if env == nil {
		env = os.Environ()
	}
	return config.Input{Args: args, Environ: env}
}

// Config is the decoded configuration.
func (s *Sandboxer) Config() *config.Config { return s.cfg }

// StatePath is the state file in use (with Options.Backend: where
// snapshots are kept next to).
func (s *Sandboxer) StatePath() string { return s.statePath }

// Store is the state backend (for tooling that inspects state).
func (s *Sandboxer) Store() state.Backend { return s.store }

// Connect contacts the engine now rather than on first use (serve checks
// it at start).
func (s *Sandboxer) Connect(ctx context.Context) error {
	_, err := s.prov.get(ctx)
	return classify(err)
}

// Close releases the engine connection, if one was made, the admin
// connections of database hosts, and a state backend the library opened
// itself (a database's connections; one passed in Options is the
// caller's).
func (s *Sandboxer) Close() error {
	s.dbs.close()
	err := s.prov.Close()
	if c, ok := s.store.(interface{ Close() error }); ok && s.opts.Backend == nil {
		err = errors.Join(err, c.Close())
	}
	return err
}

// broker is the on-demand broker over this configuration: the library's
// calls are the only way to it (front ends never reach behind them).
func (s *Sandboxer) broker() *ondemand.Broker {
	return &ondemand.Broker{Config: s.cfg, Catalog: s.cat, Store: s.store, Provider: s.prov, Data: s.mover(),
		Events: s.opts.Events, Now: s.opts.Now, LockTimeout: s.opts.LockTimeout,
		Rotator: s.rotator(), OnClaim: s.pools.claimed}
}

// reaper destroys expired instances and orphaned resources of this
// state (Reap, the janitor).
func (s *Sandboxer) reaper() *ondemand.Reaper {
	return &ondemand.Reaper{Config: s.cfg, Store: s.store, Provider: s.prov,
		Inventory: s.prov, Events: s.opts.Events, Now: s.opts.Now}
}

// data runs snapshot, restore and reset. Snapshots live in "snapshots"
// next to the state file (.sandboxer/snapshots by default).
func (s *Sandboxer) data() *snapshot.Manager {
	return &snapshot.Manager{Records: s.store, Engine: s.prov, Store: SnapshotStore(s.statePath),
		Events: s.opts.Events, LockTimeout: s.opts.LockTimeout, Now: s.opts.Now}
}

// mover seeds and carries data for the executors this library runs.
func (s *Sandboxer) mover() snapshot.Mover { return s.moverFor(s.prov) }

func (s *Sandboxer) moverFor(prov *lazyProvider) snapshot.Mover {
	return snapshot.Mover{Engine: prov, SQL: prov, Store: SnapshotStore(s.statePath), Dir: s.dir}
}

// SnapshotStore is the snapshot directory that belongs to a state file.
func SnapshotStore(statePath string) snapshot.Store {
	return snapshot.Store{Dir: filepath.Join(filepath.Dir(statePath), "snapshots"), Formats: services.SnapshotFormats}
}

func (s *Sandboxer) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}
