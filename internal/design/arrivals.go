package design

import "math"

// arrivals counts a gateway's arrivals per sync interval over the last
// window: a ring of len(intervals) buckets of span sync intervals each, whose
// sum is sum; filled is how many intervals the bucket at next holds. A window
// of at most the given number of intervals has a bucket per interval (span
// 1); a longer one shares them, so that its memory never passes that many
// counters. Integers only: skipping n empty intervals at once leaves exactly
// the state that closing them one by one would.
type arrivals struct {
	intervals []int
	span      int
	filled    int
	next      int
	sum       int
	// with a bucket an interval: when ahead is true, the bucket empty
	// distance buckets from next is the first that is not (emptyAhead's
	// last scan, kept while the closes move next towards it)
	ahead    bool
	distance int
}

// MaxLeaseBuckets bounds the arrival counters a lease keeps per key.
const MaxLeaseBuckets = 4096

// HeadroomBuckets bounds the arrival counters headroom keeps per key: its
// budget needs the window's mean rate, not its shape, and a key of an hour's
// window held 34 KB with MaxLeaseBuckets.
const HeadroomBuckets = 64

// newArrivals is an empty ring for c's window of at most max buckets.
func newArrivals(c Config, most int) arrivals {
	n := math.Round(float64(c.Window.Size) / float64(c.Sync))
	n = max(min(n, 1<<40), 1)
	buckets := int(min(n, float64(most)))
	span := int(math.Ceil(n / float64(buckets)))
	return arrivals{intervals: make([]int, buckets), span: span}
}

// mean is the arrivals per sync interval over the closed intervals of the
// last window.
func (a *arrivals) mean() float64 {
	return float64(a.sum) / float64(len(a.intervals)*a.span)
}

// closeInterval closes a sync interval with c arrivals: the oldest bucket
// makes room for it.
func (a *arrivals) closeInterval(c int) {
	if a.filled == 0 {
		a.sum -= a.intervals[a.next]
		a.intervals[a.next] = 0
	}
	a.intervals[a.next] += c
	a.sum += c
	a.passed(1)
	if a.filled++; a.filled == a.span {
		a.filled = 0
		if a.next++; a.next == len(a.intervals) {
			a.next = 0
		}
	}
}

// closeEmpty closes n intervals without arrivals, a bucket at a time.
func (a *arrivals) closeEmpty(n int) {
	if n >= len(a.intervals)*a.span { // every bucket makes room; where the ring stands moves on as closing one by one would
		clear(a.intervals)
		a.sum = 0
		a.ahead = false
		total := a.filled + n%(len(a.intervals)*a.span)
		a.next = (a.next + total/a.span) % len(a.intervals)
		a.filled = total % a.span
		return
	}
	if a.span == 1 && a.ahead { // over the buckets known empty only next moves
		skip := min(n, a.distance)
		a.next = (a.next + skip) % len(a.intervals)
		a.passed(skip)
		if n -= skip; n == 0 {
			return
		}
	}
	a.passed(n)
	if a.filled > 0 { // the bucket at next takes its share first
		step := min(n, a.span-a.filled)
		n -= step
		if a.filled += step; a.filled == a.span {
			a.filled = 0
			a.next = (a.next + 1) % len(a.intervals)
		}
	}
	if whole := n / a.span; whole > 0 { // the buckets the skip fills make room
		a.next = a.clearFrom(a.next, whole)
		n -= whole * a.span
	}
	if n > 0 { // entering the bucket at next: it makes room
		a.sum -= a.intervals[a.next]
		a.intervals[a.next] = 0
		a.filled = n
	}
}

// clearFrom empties the n buckets from i on, round the ring, taking their
// counts off the sum, and returns the index after them: in runs of
// contiguous buckets, as an idle gateway of a long window skips hundreds at
// once.
func (a *arrivals) clearFrom(i, n int) int {
	for n > 0 {
		seg := a.intervals[i:min(i+n, len(a.intervals))]
		gone := 0 // in a local, not the ring's field every step
		for _, c := range seg {
			gone += c
		}
		a.sum -= gone
		clear(seg)
		n -= len(seg)
		if i += len(seg); i == len(a.intervals) {
			i = 0
		}
	}
	return i
}

// emptyAhead is how many of the next closes drop only empty intervals from
// the window (so leave the mean unchanged when they are empty too): math.MaxInt
// when nothing is counted, 0 when buckets are shared (no cheap count).
func (a *arrivals) emptyAhead() int {
	if a.sum == 0 {
		return math.MaxInt
	}
	if a.span > 1 {
		return 0
	}
	if a.ahead {
		return a.distance
	}
	n := 0
	for i := a.next; a.intervals[i] == 0; {
		n++
		if i++; i == len(a.intervals) {
			i = 0
		}
	}
	a.ahead, a.distance = true, n
	return n
}

// passed moves emptyAhead's last answer n closes on: the buckets those
// closes write are behind every one it scanned, so it holds until the
// closes reach the bucket it found.
func (a *arrivals) passed(n int) {
	if a.ahead = a.ahead && a.span == 1 && n <= a.distance-1; a.ahead {
		a.distance -= n
	}
}
