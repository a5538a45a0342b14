// Package sweep runs many simulations in parallel on all cores. Each run is
// independent and deterministic, and results are kept in input order, so the
// outcome never depends on the number of workers or on scheduling. Runs that
// see the same requests (sim.RequestsKey) share them, drawn once
// (sim.DrawRequests), and a run whose result cannot depend on its fleet
// (sim.Params.FleetFree) takes that of the run just like it but for the
// fleet; so does one whose decisions cannot depend on its sync interval
// (sim.Params.SyncBlind) when the caller wants no store counts: exactly the
// same results, faster.
//
// It must never share mutable state between runs or let a run see the wall
// clock.
package sweep

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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
	// NoStoreCounts leaves every Result's Store counts zero, for a caller
	// that reports none: runs that differ only in their sync interval then
	// share their decisions when those ignore it (sim.Params.SyncBlind),
	// whose store counts would differ.
	NoStoreCounts bool
}

// Run runs every params and returns their outcomes in the same order. It
// starts them in that order, except that the runs sharing their requests
// start together, where the first of them would: the requests are held
// from then until the last of them ends, so that few are held at once. A
// run that takes another's result (twins) is done when that one is. When
// ctx is cancelled, runs not yet started are skipped and marked not Done;
// runs already under way finish.
func Run(ctx context.Context, params []sim.Params, opt Options) []Outcome {
	out := make([]Outcome, len(params))
	copyOf := Twins(params, opt)
	copies := copiesOf(copyOf)
	shared := share(params, copyOf)
	order := startOrder(shared, copyOf)
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
				j := int(next.Add(1) - 1)
				if j >= len(order) {
					return
				}
				i := order[j]
				r, err := shared[i].run(params[i])
				if opt.NoStoreCounts {
					r.Store = sim.StoreCounts{}
				}
				out[i] = Outcome{Result: r, Err: err, Done: true}
				for _, c := range copies[i] {
					out[c] = twin(r, err, params[c])
				}
				if opt.Progress != nil {
					mu.Lock()
					for _, k := range append([]int{i}, copies[i]...) {
						done++
						opt.Progress(done, k)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// requests are the requests drawn ahead for the runs of one key.
type requests struct {
	runs []int // the runs that share them, in the order given
	once sync.Once
	rq   *sim.Requests
	err  error
	mu   sync.Mutex
	left int // runs not yet finished
}

// Twins finds the runs of a sweep with opt that take another run's
// result: those with the same parameters (the study's counters part
// repeats some of its other parts' runs); those that differ from it only
// in their sync interval, for runs that do not depend on it at all
// (sim.Params.FleetFree); and with opt.NoStoreCounts, those that differ
// from it only in their fleet, for those same runs, or only in their sync
// interval, for runs whose decisions ignore it (sim.Params.SyncBlind). For
// each run it returns the index of the run whose result it takes, or -1
// where it runs itself. Of a group of twins, the one that runs is the
// first with the longest interval: it performs the fewest syncs.
func Twins(params []sim.Params, opt Options) []int {
	runs := map[string]int{}
	keys := make([]string, len(params))
	for i, p := range params {
		k, ok := twinKey(p, opt)
		if !ok {
			continue
		}
		keys[i] = k
		if j, ok := runs[k]; !ok || p.Sync > params[j].Sync {
			runs[k] = i
		}
	}
	copyOf := make([]int, len(params))
	for i, k := range keys {
		copyOf[i] = -1
		if j, ok := runs[k]; ok && j != i {
			copyOf[i] = j
		}
	}
	return copyOf
}

// twinKey is what run p's twins have in common: its parameters less the
// ones its result does not depend on (all of them for a run that depends
// on every one: a run is reproducible from its parameters, so the same
// run twice runs once); false for a run that cannot run.
func twinKey(p sim.Params, opt Options) (string, bool) {
	class := "same"
	switch {
	case p.Validate() != nil:
		return "", false
	case opt.NoStoreCounts && p.FleetFree():
		class, p.Gateways, p.Sync, p.Routing, p.AlignedSync = "fleet-free", 0, 0, 0, false
	case opt.NoStoreCounts && p.SyncBlind(), p.FleetFree():
		class, p.Sync = "sync-blind", 0
	}
	return class + fmt.Sprintf("%#v", p), true // every field, slices by their contents
}

// twin is the outcome of run p, which takes r, the result of its twin (or
// its error): r with p's parameters and p's count of syncs.
func twin(r sim.Result, err error, p sim.Params) Outcome {
	if err != nil {
		return Outcome{Err: err, Done: true}
	}
	syncs, err := sim.ScheduledSyncs(p)
	if err != nil {
		return Outcome{Err: err, Done: true}
	}
	r.Params, r.Parts, r.Syncs = p, slices.Clone(r.Parts), syncs
	return Outcome{Result: r, Done: true}
}

// copiesOf inverts twins: for each run, the runs that take its result.
func copiesOf(copyOf []int) [][]int {
	out := make([][]int, len(copyOf))
	for i, j := range copyOf {
		if j >= 0 {
			out[j] = append(out[j], i)
		}
	}
	return out
}

// share finds the runs that see the same requests: for each run, the
// requests it shares, or nil where it draws its own or takes another's
// result.
func share(params []sim.Params, copyOf []int) []*requests {
	byKey := map[sim.RequestsKey]*requests{}
	out := make([]*requests, len(params))
	for i, p := range params {
		if p.Validate() != nil || !p.Shareable() || copyOf[i] >= 0 {
			continue // sim.Run says what is wrong, draws its own, or runs not
		}
		k := p.Key()
		if byKey[k] == nil {
			byKey[k] = &requests{}
		}
		out[i] = byKey[k]
		out[i].runs = append(out[i].runs, i)
		out[i].left++
	}
	for i, s := range out {
		if s != nil && s.left == 1 {
			out[i] = nil // nothing to share
		}
	}
	return out
}

// startOrder is the order runs start in: as given, but the runs that share
// their requests all where the first of them is, and without the runs that
// take another's result.
func startOrder(shared []*requests, copyOf []int) []int {
	order := make([]int, 0, len(shared))
	for i, s := range shared {
		switch {
		case copyOf[i] >= 0:
		case s == nil:
			order = append(order, i)
		case s.runs[0] == i:
			order = append(order, s.runs...)
		}
	}
	return order
}

// run runs p on the shared requests, drawing them first if no run has, and
// lets them go after the last run.
func (s *requests) run(p sim.Params) (sim.Result, error) {
	if s == nil {
		return sim.Run(p)
	}
	s.once.Do(func() { s.rq, s.err = sim.DrawRequests(p) })
	if s.err != nil {
		return sim.Result{}, s.err
	}
	r, err := sim.RunRequests(p, s.rq)
	s.mu.Lock()
	if s.left--; s.left == 0 {
		s.rq = nil
	}
	s.mu.Unlock()
	return r, err
}
