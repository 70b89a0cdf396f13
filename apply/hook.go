package apply

import (
	"time"

	"github.com/sandboxer/sandboxer/plan"
)

// Hook hears about apply's progress: the library passes the one its
// caller set (sandboxer.Options.Hook), the CLI prints it, tests record it.
// Calls may come from several goroutines at once.
type Hook interface {
	PreApply(addr string, action plan.Action)
	Progress(addr string, action plan.Action, elapsed time.Duration)
	PostApply(addr string, action plan.Action, elapsed time.Duration, generation int, err error)
}

// NopHook ignores everything.
type NopHook struct{}

func (NopHook) PreApply(string, plan.Action)                             {}
func (NopHook) Progress(string, plan.Action, time.Duration)              {}
func (NopHook) PostApply(string, plan.Action, time.Duration, int, error) {}
