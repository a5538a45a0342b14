package design

import "github.com/fleetlimit/fleetlimit/window"

// HistoryBuckets is how many counters a gateway keeps, per key, of its own
// admits that the store has acknowledged, when its driver asks for a
// history (Config.Mend): enough to re-seed a store that forgot the key
// with each admit counted at most a sixteenth of the window too long.
const HistoryBuckets = 16

// history counts a gateway's acknowledged admits of one key in the window,
// in buckets of a HistoryBuckets-th of the window, so that it can push them
// again to a store that lost them. It holds one bucket more than a window,
// as the oldest bucket still in the window is a part one. Its memory is
// fixed whatever the traffic.
type history struct {
	spec   window.Spec
	width  int64 // a bucket's span, ns
	counts [ring]int32
	last   int64 // the newest bucket written; the ring holds last-ring+1 .. last
	used   bool
}

// ring is the buckets a history holds.
const ring = HistoryBuckets + 1

func newHistory(spec window.Spec) *history {
	w := max((int64(spec.Size)+HistoryBuckets-1)/HistoryBuckets, 1) // the buckets cover the window
	return &history{spec: spec, width: w}
}

// add counts n admits at t (t >= 0). An admit older than the ring is
// dropped: it left the window.
func (h *history) add(t int64, n int) {
	b := t / h.width
	switch {
	case !h.used:
		h.used, h.last = true, b
	case b > h.last:
		for x := max(h.last+1, b-ring+1); x <= b; x++ {
			h.counts[x%ring] = 0
		}
		h.last = b
	case b <= h.last-ring:
		return
	}
	c := &h.counts[b%ring]
	*c = int32(min(int64(*c)+int64(n), 1<<31-1))
}

// snapshot returns the admits that may still count at now, one stamp a
// bucket, at the latest instant of its bucket (never after now), ascending:
// each counts no shorter than the admits it stands for, and at most a
// bucket longer.
func (h *history) snapshot(now int64) (stamps []int64, counts []int) {
	if !h.used {
		return nil, nil
	}
	lo := h.spec.Lo(now)
	for b := h.last - ring + 1; b <= h.last; b++ {
		if b < 0 {
			continue
		}
		c := h.counts[b%ring]
		end := min((b+1)*h.width-1, now)
		if c == 0 || end < lo {
			continue
		}
		stamps = append(stamps, end)
		counts = append(counts, int(c))
	}
	return stamps, counts
}

// copyFrom takes o's counts, when o counts the same buckets.
func (h *history) copyFrom(o *history) {
	if o != nil && o.width == h.width {
		*h = *o
	}
}
