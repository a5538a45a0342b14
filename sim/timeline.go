package sim

import (
	"fmt"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

// Timeline is what a run admitted, gateway by gateway, in buckets of
// time from its start: the mechanism behind its figures.
type Timeline struct {
	Bucket time.Duration `json:"bucket_ns"`
	// Admits[b][g] is gateway g's admits in bucket b, for every gateway
	// index of the run (those that join later too, Faults.Members).
	Admits [][]int `json:"admits"`
	// Rejects[b] is the fleet's rejections in bucket b.
	Rejects []int `json:"rejects"`
	// InWindow[b] is the fleet's admits in the window W that ends with
	// bucket b (the figure worst_window_x is the largest of, over L).
	InWindow []int `json:"in_window"`
	// Syncs[b] and RoundTrips[b] are the fleet's syncs and round trips
	// (central checks) that started in bucket b.
	Syncs      []int `json:"syncs"`
	RoundTrips []int `json:"round_trips"`
	// Views[b][g] is gateway g's view of the key at the end of bucket b:
	// how many more requests it would admit then, as it sees the key (by
	// its fallback's rule while the store is down); -1 while g is not in
	// the fleet. Nil for a key with several limits.
	Views [][]int `json:"views,omitempty"`
}

// MaxTimelineBuckets is the most buckets a timeline holds.
const MaxTimelineBuckets = 10_000

// RunTimeline runs p and returns its figures and its timeline in buckets
// of the given width up to until (at most the run's end).
func RunTimeline(p Params, bucket, until time.Duration) (Result, Timeline, error) {
	until = min(until, p.Duration)
	if bucket <= 0 || until <= 0 {
		return Result{}, Timeline{}, fmt.Errorf("timeline: bucket %v and span %v must be positive", bucket, until)
	}
	n := int((until + bucket - 1) / bucket)
	if n > MaxTimelineBuckets {
		return Result{}, Timeline{}, fmt.Errorf("timeline: %v in buckets of %v is %d buckets, more than %d: widen the bucket or shorten the span",
			until, bucket, n, MaxTimelineBuckets)
	}
	tl := Timeline{Bucket: bucket, Admits: make([][]int, n), Rejects: make([]int, n), InWindow: make([]int, n)}
	var stamps []int64 // the admits' times, in order
	r, err := newRunner(p, func(t int64, g int, v design.Verdict) {
		if t >= int64(until) {
			return
		}
		b := int(t / int64(bucket))
		if v == design.Admit {
			tl.Admits[b][g]++
			stamps = append(stamps, t)
		} else {
			tl.Rejects[b]++
		}
	}, nil, nil)
	if err != nil {
		return Result{}, Timeline{}, err
	}
	for b := range tl.Admits { // a gateway for each index, those that join later too
		tl.Admits[b] = make([]int, len(r.gws))
	}
	w := r.watchTimeline(bucket, until, n)
	r.execute(modeAuto)
	w.finish()
	tl.Syncs, tl.RoundTrips, tl.Views = w.syncs, w.trips, w.views
	res := r.m.result(r.end)
	if r.multi != nil {
		res.Limits = r.multi.limitResults(p, r.end)
	}
	lo, hi := 0, 0 // the admits in (end−W, end)
	for b := range tl.InWindow {
		end := min(int64(b+1)*int64(bucket), int64(until))
		for hi < len(stamps) && stamps[hi] < end {
			hi++
		}
		for lo < hi && stamps[lo] <= end-int64(p.Window) {
			lo++
		}
		tl.InWindow[b] = hi - lo
	}
	return res, tl, nil
}

// watchTimeline sets r to be watched in n buckets of the given width up
// to until.
func (r *runner) watchTimeline(bucket, until time.Duration, n int) *watch {
	w := &watch{bucket: int64(bucket), until: int64(until), syncs: make([]int, n), trips: make([]int, n)}
	if r.multi == nil {
		w.views = make([][]int, n)
		for b := range w.views {
			w.views[b] = make([]int, len(r.gws))
		}
	}
	w.view = func(g int, at int64) (int, bool) {
		if g >= r.p.Gateways {
			return 0, false
		}
		v, _ := r.gws[g].View(at, false)
		return v, true
	}
	r.watch = w
	return w
}
