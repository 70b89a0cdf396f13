package sandboxer

import (
	"context"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/ondemand"
)

// Level is how many instances of one on-demand block there are now (its
// keyed instances, its pool's ready members and size).
type Level = ondemand.Level

// Levels counts the instances of every on-demand block in one read of
// the state, every tenant's included: no lock and no engine call, so a
// monitoring scrape may ask it often. Pool members are counted apart from
// the block's instances.
func (s *Sandboxer) Levels(ctx context.Context) ([]Level, error) {
	l, err := s.broker().Levels(ctx)
	return l, classify(err)
}

// ReadyCheck is one thing a replica needs to take work: the state
// backend ("state") or a runtime the configuration uses ("runtime
// docker", "runtime kubernetes"). Err is nil when it answers.
type ReadyCheck struct {
	Name string
	Err  error
}

// Ready checks, cheaply, that the state backend answers a read and that
// every runtime the configuration uses is reachable (connecting it if it
// was not yet). It returns every check, failed or not, in a fixed order.
func (s *Sandboxer) Ready(ctx context.Context) []ReadyCheck {
	// An address no record can have: one indexed read, no lock.
	_, err := s.store.Get(ctx, "(readyz)")
	out := []ReadyCheck{{Name: "state", Err: classify(err)}}
	for _, rt := range s.prov.runtimeList() {
		out = append(out, ReadyCheck{Name: "runtime " + rt, Err: classify(s.prov.ping(ctx, rt))})
	}
	return out
}

// ping connects runtime if needed and asks it whether it answers; a
// provider that cannot be pinged counts as reachable once connected.
func (l *lazyProvider) ping(ctx context.Context, runtime string) error {
	p, err := l.on(ctx, runtime)
	if err != nil {
		return err
	}
	if pg, ok := apply.As[apply.Pinger](p); ok {
		return pg.Ping(ctx)
	}
	return nil
}
