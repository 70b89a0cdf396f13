package sandboxer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/plugin"
	"github.com/sandboxer/sandboxer/providers/docker"
	"github.com/sandboxer/sandboxer/providers/fake"
)

// The composition root: the one place that knows the concrete runtimes
// and sets them up from Options. Everything else talks to apply.Provider
// and its capabilities.

// connect makes the provider of a runtime from its provider block:
// Options.Provider or Options.NewProvider when set, else the Docker or
// the Kubernetes runtime.
func (s *Sandboxer) connect(ctx context.Context, runtime string, pc *config.Provider) (apply.Provider, error) {
	if s.opts.Provider != nil {
		return s.opts.Provider, nil
	}
	if s.opts.NewProvider != nil {
		return s.opts.NewProvider(ctx, pc, s.cat)
	}
	if runtime == config.RuntimeKubernetes {
		return s.connectKubernetes(ctx, pc)
	}
	readyTimeout, err := s.readyTimeout()
	if err != nil {
		return nil, err
	}
	p, err := docker.New(ctx, pc, s.cat)
	if err != nil { // not `return docker.New(…)`: a nil *Provider is a non-nil interface
		return nil, err
	}
	p.PullProgress = s.opts.PullProgress
	if !s.opts.NoCache {
		p.SetCacheDir(s.cacheDir())
	}
	p.ReadyTimeout = readyTimeout
	if p.ReadyTimeout == 0 {
		p.ReadyTimeout = pc.ReadyTimeout
	}
	p.CADir = s.caDir()
	return p, nil
}

// inMemoryProvider is the runtime of `sandboxer test --in-memory`: the
// in-memory fake, which plans and applies as an engine would but runs
// nothing.
func inMemoryProvider(cat *config.Catalog) apply.Provider { return fake.New(cat) }

// getenv reads the options' environment (os.Environ when unset).
func (s *Sandboxer) getenv(name string) string {
	env := s.opts.Environ
	if env == nil {
		return os.Getenv(name)
	}
	prefix := name + "="
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], prefix); ok {
			return v
		}
	}
	return ""
}

// readyTimeout is Options.ReadyTimeout, else SANDBOXER_READY_TIMEOUT
// (a loaded CI machine can take longer than the default to start
// PostgreSQL), else 0: the provider's default.
func (s *Sandboxer) readyTimeout() (time.Duration, error) {
	if s.opts.ReadyTimeout > 0 {
		return s.opts.ReadyTimeout, nil
	}
	v := s.getenv("SANDBOXER_READY_TIMEOUT")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, &Error{Code: CodeInvalid, Message: fmt.Sprintf("SANDBOXER_READY_TIMEOUT=%q: want a positive duration such as 3m", v)}
	}
	return d, nil
}

// cacheDir is where the provider caches what each image provides, by
// image id: Options.CacheDir, SANDBOXER_CACHE_DIR, else sandboxer under
// the user's cache directory ($XDG_CACHE_HOME or ~/.cache). "" (no home)
// keeps the cache in memory for the process only.
func (s *Sandboxer) cacheDir() string {
	if s.opts.CacheDir != "" {
		return s.opts.CacheDir
	}
	if d := s.getenv("SANDBOXER_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "sandboxer")
}

// caDir is where TLS sandboxes' CA files are written: Options.CADir, else
// ca/ beside the state file, absolute so handed-out paths work from any
// directory.
func (s *Sandboxer) caDir() string {
	dir := s.opts.CADir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(s.statePath), "ca")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// connectKubernetes starts the Kubernetes runtime, which runs in a program
// of its own (internal/plugin) so that no other command pays for linking
// client-go. A cluster that cannot be reached, a namespace it lacks, or a
// missing program is blamed on the provider block when the configuration
// has one, so plan shows where it is set.
func (s *Sandboxer) connectKubernetes(ctx context.Context, pc *config.Provider) (apply.Provider, error) {
	if pc == nil {
		return nil, &Error{Code: CodeInvalid, Message: "the plan has no kubernetes provider configuration; run sandboxer plan again"}
	}
	readyTimeout, err := s.readyTimeout()
	if err != nil {
		return nil, err
	}
	settings := plugin.Settings{Provider: pc, Catalog: s.cat.Specs(), ReadyTimeout: readyTimeout, CADir: s.caDir()}
	if !s.opts.NoCache {
		// Its own directory: entries are keyed by what the node reports
		// of an image, not by Docker's image ids.
		if dir := s.cacheDir(); dir != "" {
			settings.CacheDir = filepath.Join(dir, "kubernetes")
		}
	}
	program, err := plugin.Find(plugin.KubernetesProgram)
	if err != nil {
		return nil, s.locatedProviderError(pc, fmt.Errorf("kubernetes provider: %w", err))
	}
	p, err := plugin.Start(ctx, program, settings)
	if err != nil {
		return nil, s.locatedProviderError(pc, err)
	}
	return p, nil
}

// locatedProviderError turns a failed connect into a diagnostic on the
// provider block (its runtime's own message as the detail), or returns it
// as it is when there is no block to blame.
func (s *Sandboxer) locatedProviderError(pc *config.Provider, err error) error {
	if pc.DeclRange.Filename == "" || s.cfg == nil {
		return err
	}
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot use the " + pc.Runtime + " provider",
		Detail: upperFirst(err.Error()) + ".", Subject: pc.DeclRange.Ptr()}
	return &ConfigError{Diagnostics: hcl.Diagnostics{d}, Files: s.cfg.Files}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
