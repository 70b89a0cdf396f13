package docker

import (
	"context"
	"slices"
	"sync"

	"github.com/sandboxer/sandboxer/services"
)

// startGates lets each service begin only once the services ranked before
// it have started their containers (or failed before getting there).
type startGates struct {
	services []string // sorted by services.StartRank
	done     map[string]chan struct{}
	once     map[string]*sync.Once
}

func newStartGates(svcs []string) *startGates {
	g := &startGates{
		services: slices.Clone(svcs),
		done:     map[string]chan struct{}{},
		once:     map[string]*sync.Once{},
	}
	slices.SortStableFunc(g.services, func(a, b string) int { return services.StartRank(a) - services.StartRank(b) })
	for _, s := range svcs {
		g.done[s] = make(chan struct{})
		g.once[s] = &sync.Once{}
	}
	return g
}

// wait blocks until every service ranked before service has passed its
// start, or ctx ends.
func (g *startGates) wait(ctx context.Context, service string) error {
	for _, s := range g.services {
		if services.StartRank(s) >= services.StartRank(service) {
			return nil
		}
		select {
		case <-g.done[s]:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// pass marks service's start as over, whether it happened or not. It may be
// called more than once.
func (g *startGates) pass(service string) {
	if o, ok := g.once[service]; ok {
		o.Do(func() { close(g.done[service]) })
	}
}
