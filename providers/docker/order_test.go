package docker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStartGates(t *testing.T) {
	g := newStartGates([]string{"redis", "postgres"})
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for _, svc := range []string{"redis", "postgres"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.wait(context.Background(), svc); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, svc)
			mu.Unlock()
			g.pass(svc)
			g.pass(svc) // twice is fine
		}()
	}
	wg.Wait()
	if diff := cmp.Diff([]string{"postgres", "redis"}, order); diff != "" {
		t.Errorf("start order (-want +got):\n%s", diff)
	}

	// Redis alone does not wait for a postgres that is not in the request.
	if err := newStartGates([]string{"redis"}).wait(context.Background(), "redis"); err != nil {
		t.Error(err)
	}

	// A waiting start gives up with its context.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := newStartGates([]string{"postgres", "redis"}).wait(ctx, "redis"); err == nil {
		t.Error("wait returned without postgres passing")
	}
}
