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
	// Admits[b][g] is gateway g's admits in bucket b.
	Admits [][]int `json:"admits"`
	// Rejects[b] is the fleet's rejections in bucket b.
	Rejects []int `json:"rejects"`
	// InWindow[b] is the fleet's admits in the window W that ends with
	// bucket b (the figure worst_window_x is the largest of, over L).
	InWindow []int `json:"in_window"`
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
	for b := range tl.Admits {
		tl.Admits[b] = make([]int, p.Gateways)
	}
	var stamps []int64 // the admits' times, in order
	r, err := RunTrace(p, func(t int64, g int, v design.Verdict) {
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
	})
	if err != nil {
		return Result{}, Timeline{}, err
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
	return r, tl, nil
}
