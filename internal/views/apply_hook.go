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
	h.printf("%s: %s...\n", h.c.Bold(addr), wordsFor(a).progress)
}

func (h *ApplyHook) Progress(addr string, a plan.Action, elapsed time.Duration) {
	h.printf("%s: Still %s... [%s elapsed]\n", h.c.Bold(addr), wordsFor(a).ongoing, roundDur(elapsed))
}

func (h *ApplyHook) PostApply(addr string, a plan.Action, elapsed time.Duration, gen int, err error) {
	if err != nil {
		h.printf("%s: %s\n", h.c.Bold(addr), h.c.Red(fmt.Sprintf("%s failed after %s", wordsFor(a).done, roundDur(elapsed))))
		return
	}
	suffix := ""
	if a != plan.Delete {
		suffix = fmt.Sprintf(" [generation %d]", gen)
	}
	h.printf("%s: %s complete after %s%s\n", h.c.Bold(addr), wordsFor(a).done, roundDur(elapsed), suffix)
}

func (h *ApplyHook) printf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(h.w, format, args...)
}

func roundDur(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
