package views

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/plan"
)

// ApplyHook prints Terraform-like progress lines for apply and destroy.
type ApplyHook struct {
	mu sync.Mutex
	w  io.Writer
	c  Colorizer
}

// NewApplyHook writes progress to w (stderr, so stdout stays parseable).
func NewApplyHook(w io.Writer, c Colorizer) *ApplyHook { return &ApplyHook{w: w, c: c} }

func (h *ApplyHook) PreApply(addr string, a plan.Action) {
	h.printf("%s: %s...\n", h.c.Bold(addr), progressVerb(a))
}

func (h *ApplyHook) Progress(addr string, a plan.Action, elapsed time.Duration) {
	h.printf("%s: Still %s... [%s elapsed]\n", h.c.Bold(addr), lowerVerb(a), roundDur(elapsed))
}

func (h *ApplyHook) PostApply(addr string, a plan.Action, elapsed time.Duration, gen int, err error) {
	if err != nil {
		h.printf("%s: %s\n", h.c.Bold(addr), h.c.Red(fmt.Sprintf("%s failed after %s", completeNoun(a), roundDur(elapsed))))
		return
	}
	suffix := ""
	if a != plan.Delete {
		suffix = fmt.Sprintf(" [generation %d]", gen)
	}
	h.printf("%s: %s complete after %s%s\n", h.c.Bold(addr), completeNoun(a), roundDur(elapsed), suffix)
}

func (h *ApplyHook) printf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(h.w, format, args...)
}

func progressVerb(a plan.Action) string {
	switch a {
	case plan.Create:
		return "Creating"
	case plan.CreateThenDelete:
		return "Replacing (new before old)"
	case plan.Delete:
		return "Destroying"
	}
	return "Reusing"
}

func lowerVerb(a plan.Action) string {
	switch a {
	case plan.Create:
		return "creating"
	case plan.CreateThenDelete:
		return "replacing"
	case plan.Delete:
		return "destroying"
	}
	return "working"
}

func completeNoun(a plan.Action) string {
	switch a {
	case plan.Create:
		return "Creation"
	case plan.CreateThenDelete:
		return "Replacement"
	case plan.Delete:
		return "Destruction"
	}
	return "Reuse"
}

func roundDur(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
