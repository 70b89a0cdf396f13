package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
)

// Version is sandboxer's version, reported by `version` and in JSON plans.
const Version = "0.1.0"

// IOStreams are the process's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	OutTTY bool // colour and prompts only on a terminal
	ErrTTY bool
	InTTY  bool
}

// GlobalOptions are the flags every command accepts.
type GlobalOptions struct {
	Chdir   string
	State   string
	Backend string
	NoColor bool
	// Tenant: see actAsTenant.
	Tenant string
}

// Factory carries what commands need from the outside world, so tests can
// swap any of it.
type Factory struct {
	IO      IOStreams
	Environ []string
	Now     func() time.Time
	Catalog *config.Catalog
	Global  GlobalOptions
	// Interrupt closes on the first Ctrl-C: apply stops starting new work.
	// A nil channel never closes.
	Interrupt <-chan struct{}
	// readOnly is set once the command line names a command that changes
	// nothing, so the first Ctrl-C's notice does not speak of changes in
	// flight (see interruptNotice).
	readOnly atomic.Bool
	// hard is cancelled on the second Ctrl-C: in-flight work is abandoned.
	// Commands get a context cancelled already on the first.
	hard context.Context
	// backends caches the keyring and database pool (see Store).
	backends backends
}

// Getenv reads a variable from the factory's environment.
func (f *Factory) Getenv(name string) string {
	prefix := name + "="
	for i := len(f.Environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(f.Environ[i], prefix); ok {
			return v
		}
	}
	return ""
}

// Dir is the configuration directory.
func (f *Factory) Dir() string {
	if f.Global.Chdir != "" {
		return f.Global.Chdir
	}
	return "."
}

// StatePath is the state file: --state, else .sandboxer/state.db under the
// configuration directory.
func (f *Factory) StatePath() string {
	c, _ := f.choice()
	return c.StatePath
}

// Path resolves a user-given path against the configuration directory,
// as if sandboxer had changed into it (Terraform's -chdir semantics).
func (f *Factory) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.Dir(), p)
}

// Color tells renderers whether to use ANSI colours.
func (f *Factory) Color() views.Colorizer {
	return views.Colorizer{Enabled: f.IO.OutTTY && !f.Global.NoColor && f.Getenv("NO_COLOR") == ""}
}

// ErrColor is Color for stderr output.
func (f *Factory) ErrColor() views.Colorizer {
	return views.Colorizer{Enabled: f.IO.ErrTTY && !f.Global.NoColor && f.Getenv("NO_COLOR") == ""}
}
