package sandboxer

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/providers/fake"
)

// exitingProvider is a runtime whose program can end, as a
// plugin.Client's does.
type exitingProvider struct {
	*fake.Provider
	exited, closed atomic.Bool
}

func (p *exitingProvider) Exited() bool { return p.exited.Load() }
func (p *exitingProvider) Close() error { p.closed.Store(true); return nil }

// A runtime whose program ended is started again on next use (serve
// outlives a crashed sandboxer-kubernetes); one still running is reused.
func TestEndedRuntimeIsStartedAgain(t *testing.T) {
	var started []*exitingProvider
	l := &lazyProvider{owned: true, connect: func(context.Context, string) (apply.Provider, error) {
		p := &exitingProvider{Provider: fake.New(nil)}
		started = append(started, p)
		return p, nil
	}}
	ctx := context.Background()
	first, err := l.on(ctx, config.RuntimeKubernetes)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := l.on(ctx, config.RuntimeKubernetes); again != first || len(started) != 1 {
		t.Fatalf("a running runtime was started again (%d starts)", len(started))
	}
	started[0].exited.Store(true)
	next, err := l.on(ctx, config.RuntimeKubernetes)
	if err != nil {
		t.Fatal(err)
	}
	if next == first || len(started) != 2 {
		t.Fatalf("an ended runtime was not started again (%d starts)", len(started))
	}
	if !started[0].closed.Load() {
		t.Error("the ended runtime's client was not closed")
	}
}
