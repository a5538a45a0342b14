// Package sweep runs many simulations in parallel on all cores. Each run is
// independent and deterministic, and results are kept in input order, so the
// outcome never depends on the number of workers or on scheduling.
//
// It must never share state between runs or let a run see the wall clock.
package sweep

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/fleetlimit/fleetlimit/sim"
)

// Outcome is one run's result, or why it did not finish.
type Outcome struct {
	Result sim.Result
	Err    error
	Done   bool // false when the sweep was cancelled before the run ended
}

// Options tune a sweep.
type Options struct {
	// Workers is the number of runs at once; 0 means one per core.
	Workers int
	// Progress, when set, is called after each finished run with the
	// number finished and the index of the run that just finished, from
	// the worker goroutines (serialised).
	Progress func(done, index int)
}

// Run runs every params and returns their outcomes in the same order. When
// ctx is cancelled, runs not yet started are skipped and marked not Done;
// runs already under way finish.
func Run(ctx context.Context, params []sim.Params, opt Options) []Outcome {
	out := make([]Outcome, len(params))
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(params))
	var next atomic.Int64
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(params) {
					return
				}
				r, err := sim.Run(params[i])
				out[i] = Outcome{Result: r, Err: err, Done: true}
				if opt.Progress != nil {
					mu.Lock()
					done++
					opt.Progress(done, i)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return out
}
