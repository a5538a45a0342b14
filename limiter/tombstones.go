package limiter

import (
	"time"

	"github.com/bits-and-blooms/bloom/v3"
)

// tombstones remember the keys evicted lately, so that a key wanted again
// less than a window after its eviction learns the store's count before it
// decides: its new state knows nothing of the admits its window holds. Two
// Bloom filters take turns: the current one takes new tombstones until it
// holds its capacity or is as old as the longest window of any key evicted
// so far, and then replaces the older one, so a tombstone lives at least
// its key's window unless more than capacity keys are evicted within it. A
// false positive (1%) costs a key one sync before its first decision.
type tombstones struct {
	capacity uint
	cur, old *bloom.BloomFilter
	n        uint  // tombstones in cur
	started  int64 // when cur began taking them
	span     int64 // the longest window of a key evicted so far
}

// tombstoneFP is the filters' rate of false positives.
const tombstoneFP = 0.01

func newTombstones(capacity int) tombstones { return tombstones{capacity: uint(capacity)} }

// add remembers key, evicted at now, whose window is w.
func (t *tombstones) add(now int64, key string, w time.Duration) {
	if t.cur == nil {
		t.cur, t.started = bloom.NewWithEstimates(t.capacity, tombstoneFP), now
	}
	if t.n >= t.capacity || t.n > 0 && now-t.started >= t.span {
		t.rotate(now)
	}
	t.cur.AddString(key)
	t.n++
	t.span = max(t.span, int64(w))
}

// rotate makes the current filter the older one and starts a new one in
// the old one's memory.
func (t *tombstones) rotate(now int64) {
	if t.old == nil {
		t.old = bloom.NewWithEstimates(t.capacity, tombstoneFP)
	}
	t.cur, t.old = t.old.ClearAll(), t.cur
	t.n, t.started = 0, now
}

// has reports whether key was evicted lately (or, rarely, a false
// positive).
func (t *tombstones) has(key string) bool {
	return t.cur != nil && (t.cur.TestString(key) || t.old != nil && t.old.TestString(key))
}
