// Package workers runs the calls of a pure package's parallel loop on
// goroutines, for its caller to pass in (replay.Options.Parallel): the pure
// package starts none itself. It must never decide anything, nor order the
// results: every call writes its own result, which the caller reads in its
// own order once all are done.
package workers

import (
	"sync"
	"sync/atomic"
)

// Pool returns a function that runs fn(w, i) for every i in [0, n) on k
// goroutines (k < 1: one), each of them a worker w in [0, k): the calls of
// one worker come one after another. It returns once every call has.
func Pool(k int) func(n int, fn func(w, i int)) {
	k = max(k, 1)
	return func(n int, fn func(w, i int)) {
		if k == 1 || n <= 1 {
			for i := range n {
				fn(0, i)
			}
			return
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := range min(k, n) {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					fn(w, i)
				}
			})
		}
		wg.Wait()
	}
}
