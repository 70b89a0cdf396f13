package ondemand

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPoolClaimBurst: SANDBOXER_BURST=N claims at once against a pool of
// N, on the real bbolt state with the fake provider and rotator: the
// broker's and the state's share of a burst's latency.
func TestPoolClaimBurst(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SANDBOXER_BURST"))
	if n <= 0 {
		t.Skip("SANDBOXER_BURST=N")
	}
	e := newEnvWith(t, strings.Replace(poolConfig, "size = 3", fmt.Sprintf("size = %d", n), 1))
	e.b.Rotator = &fakeRotator{}
	ctx := context.Background()
	if _, err := e.b.FillPool(ctx, "sandbox.warm"); err != nil {
		t.Fatal(err)
	}
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			res, err := e.b.Request(ctx, Request{Address: "sandbox.warm", Key: fmt.Sprintf("b%d", i)})
			lat[i] = time.Since(t0)
			if err != nil || !res.FromPool {
				t.Errorf("claim %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("%d claims at once: p50 %s p99 %s max %s", n, lat[n/2], lat[n*99/100], lat[n-1])
}
