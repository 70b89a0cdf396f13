package plan

import (
	"runtime"
	"sync"
)

// minParallel is how many items a loop needs before it is split over the
// cores: below it a second thread's allocations (its own spans of every
// size) cost more memory than the milliseconds it saves are worth.
const minParallel = 2048

// inPieces calls f on consecutive ranges [lo, hi) covering [0, n), one
// per core when n is large enough (none when n is 0), and returns when
// all have returned.
// The pieces are fixed by n and GOMAXPROCS, and each f writes only its
// own indices, so results come out in the order a single loop gives.
func inPieces(n int, f func(lo, hi int)) {
	if n == 0 {
		return
	}
	workers := runtime.GOMAXPROCS(0)
	if n < minParallel || workers < 2 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	size := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}
