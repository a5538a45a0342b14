// Package window holds the two window kinds of fleetlimit (sliding and fixed),
// the two ways of counting in them (an exact log of admitted timestamps, or
// counters: B buckets of W/B each), and a Log that does either.
//
// Times are int64 nanoseconds on whatever clock the caller uses; the package
// never reads a clock itself, starts no goroutine and does no I/O. A Log's
// memory is bounded by the most the window can hold (and, with counters, by
// the buckets a window spans), and a request of any cost is one entry.
package window

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind says how a window of length W is laid over time.
type Kind uint8

const (
	// Sliding counts the timestamps in (t-W, t].
	Sliding Kind = iota
	// Fixed counts the timestamps in [floor(t/W)*W, t]: windows start at
	// multiples of W and everything is forgotten at each boundary.
	Fixed
)

// String returns "sliding" or "fixed".
func (k Kind) String() string {
	switch k {
	case Sliding:
		return "sliding"
	case Fixed:
		return "fixed"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind parses "sliding" or "fixed".
func ParseKind(s string) (Kind, error) {
	switch s {
	case "sliding":
		return Sliding, nil
	case "fixed":
		return Fixed, nil
	}
	return 0, fmt.Errorf("window kind %q: want sliding or fixed", s)
}

// ParseCounting parses a kind and, after a slash, its counters: "sliding",
// "fixed", "sliding/60" (as Spec.String prints them).
func ParseCounting(s string) (Kind, int, error) {
	name, b, has := strings.Cut(s, "/")
	k, err := ParseKind(name)
	if err != nil || !has {
		return k, 0, err
	}
	n, err := strconv.Atoi(b)
	if err != nil || n < 1 {
		return k, 0, fmt.Errorf("window %q: want KIND or KIND/BUCKETS with BUCKETS a positive whole number", s)
	}
	return k, n, nil
}

// MarshalText returns the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses "sliding" or "fixed".
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Spec is a window: its length, its kind, and how it counts.
type Spec struct {
	Size time.Duration // W, > 0
	Kind Kind
	// Buckets, when > 0, counts the window in counters instead of an exact
	// log: a sliding window in B buckets of Width() each, a fixed window
	// in one counter (B must be 1). Every admit counts as if stamped at the
	// last instant of its bucket (Stamp), so a bucket counts until its
	// whole span has left the window: never less than the exact log would
	// count on the same admits, and at most ceil(W/width)+1 buckets live at
	// once, whatever the limit and the requests' costs. 0: the exact log.
	Buckets int
}

// MaxBuckets is the most counters a window may be split into.
const MaxBuckets = 3600

// Validate reports what is wrong with s, if anything.
func (s Spec) Validate() error {
	switch {
	case s.Size <= 0:
		return fmt.Errorf("window %v: want a positive length", s.Size)
	case s.Kind != Sliding && s.Kind != Fixed:
		return fmt.Errorf("window kind %v: want sliding or fixed", s.Kind)
	case s.Buckets < 0 || s.Buckets > MaxBuckets:
		return fmt.Errorf("window buckets %d: want 0 (the exact log) to %d", s.Buckets, MaxBuckets)
	case s.Kind == Fixed && s.Buckets > 1:
		return fmt.Errorf("window buckets %d: a fixed window is one counter, so want 0 (the exact log) or 1", s.Buckets)
	case s.Buckets > 0 && s.Size < time.Duration(s.Buckets)*time.Microsecond:
		return fmt.Errorf("window buckets %d: a %v window has room for at most %d buckets of a microsecond", s.Buckets, s.Size, s.Size/time.Microsecond)
	}
	return nil
}

// Counters reports whether s counts in buckets rather than an exact log.
func (s Spec) Counters() bool { return s.Buckets > 0 }

// Width returns the length of one bucket in nanoseconds, a whole number of
// microseconds (W/B rounded up; the whole window when the kind is fixed),
// or 0 for the exact log.
func (s Spec) Width() int64 {
	switch {
	case s.Buckets <= 0:
		return 0
	case s.Kind == Fixed:
		return int64(s.Size)
	}
	us := (int64(s.Size/time.Microsecond) + int64(s.Buckets) - 1) / int64(s.Buckets)
	return max(us, 1) * int64(time.Microsecond)
}

// Bucket returns the index of the bucket holding t (floor(t/Width())); s
// must count in buckets.
func (s Spec) Bucket(t int64) int64 { return floorDiv(t, s.Width()) }

// BucketStamp returns the last instant of bucket b: the time every admit
// in it counts as.
func (s Spec) BucketStamp(b int64) int64 { return (b+1)*s.Width() - 1 }

// Stamp returns the time an admit at t counts as: t itself in the exact
// log, the last instant of its bucket with counters.
func (s Spec) Stamp(t int64) int64 {
	if s.Buckets <= 0 {
		return t
	}
	return s.BucketStamp(s.Bucket(t))
}

// FirstBucket returns the oldest bucket that still counts at or after the
// bound lo (as from Lo): the first whose stamp is at least lo.
func (s Spec) FirstBucket(lo int64) int64 { return floorDiv(lo, s.Width()) }

// String returns the kind, followed by "/B" with counters: "sliding",
// "fixed", "sliding/60".
func (s Spec) String() string {
	if s.Buckets > 0 {
		return fmt.Sprintf("%v/%d", s.Kind, s.Buckets)
	}
	return s.Kind.String()
}

// Lo returns the oldest timestamp that still counts at now: a timestamp ts
// is inside the window at now exactly when Lo(now) <= ts <= now.
func (s Spec) Lo(now int64) int64 {
	w := int64(s.Size)
	if s.Kind == Fixed {
		return floorDiv(now, w) * w
	}
	return now - w + 1
}

// Reset returns the first instant after now at which the oldest timestamp
// counted at now (oldest, which must be >= Lo(now)) stops counting.
func (s Spec) Reset(now, oldest int64) int64 {
	w := int64(s.Size)
	if s.Kind == Fixed {
		return floorDiv(now, w)*w + w
	}
	return oldest + w
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Log is an exact log of admitted timestamps over one window, held in a ring
// of entries that grows on demand: a request of cost n is one entry of n
// (merged into the newest entry when it has the same time), and the log
// never counts more than its limit, so it never holds more entries than
// that. Timestamps must be added in non-decreasing order. The zero value is
// not usable; a Log is not safe for concurrent use.
type Log struct {
	spec  Spec
	limit int
	t     []int64 // ring of entry times
	n     []int   // ring of entry counts
	head  int     // index of the oldest entry
	size  int     // entries held
	count int     // the requests they stand for
}

// New returns a Log for spec that admits at most limit timestamps per window.
func New(spec Spec, limit int) *Log {
	limit = max(limit, 0)
	c := min(limit, 16)
	return &Log{spec: spec, limit: limit, t: make([]int64, c), n: make([]int, c)}
}

// Limit returns the most timestamps the log admits in one window.
func (l *Log) Limit() int { return l.limit }

// Count returns how many logged requests count at now, forgetting the ones
// that no longer do. now must not go backwards between calls.
func (l *Log) Count(now int64) int {
	lo := l.spec.Lo(now)
	for l.size > 0 && l.t[l.head] < lo {
		l.dropOldest(l.n[l.head])
	}
	return l.count
}

// dropOldest forgets k requests of the oldest entry (all of it when k is
// its count).
func (l *Log) dropOldest(k int) {
	l.count -= k
	if l.n[l.head] -= k; l.n[l.head] > 0 {
		return
	}
	l.head++
	if l.head == len(l.t) {
		l.head = 0
	}
	l.size--
}

// Allow admits a request of cost n at now if the window then holds at most
// Limit requests, logging it; otherwise it logs nothing.
func (l *Log) Allow(now int64, n int) bool {
	if n <= 0 {
		return true
	}
	if l.Count(now)+n > l.limit {
		return false
	}
	l.push(l.spec.Stamp(now), n)
	return true
}

// Add logs a request of cost n at now whatever the count, forgetting the
// oldest requests when the log would pass its limit: Count is then the true
// count capped at Limit.
func (l *Log) Add(now int64, n int) {
	l.Count(now)
	n = min(n, l.limit)
	if n <= 0 {
		return
	}
	for over := l.count + n - l.limit; over > 0; {
		k := min(over, l.n[l.head])
		l.dropOldest(k)
		over -= k
	}
	l.push(l.spec.Stamp(now), n)
}

// Unadd takes back the last n requests logged (the last Add or Allow of a
// request of cost n), from the newest entries: exact unless that Add had to
// forget older requests to stay within Limit.
func (l *Log) Unadd(n int) {
	for n > 0 && l.size > 0 {
		last := l.index(l.size - 1)
		k := min(n, l.n[last])
		l.n[last] -= k
		l.count -= k
		n -= k
		if l.n[last] == 0 {
			l.size--
		}
	}
}

// push logs n requests at stamp now; the caller made room.
func (l *Log) push(now int64, n int) {
	l.count += n
	if l.size > 0 {
		last := l.index(l.size - 1)
		if l.t[last] == now {
			l.n[last] += n
			return
		}
	}
	if l.size == len(l.t) {
		l.grow()
	}
	j := l.index(l.size)
	l.t[j], l.n[j] = now, n
	l.size++
}

// index is the ring index of the i-th oldest entry.
func (l *Log) index(i int) int {
	j := l.head + i
	if j >= len(l.t) {
		j -= len(l.t)
	}
	return j
}

func (l *Log) grow() {
	size := min(max(2*len(l.t), 1), max(l.limit, 1))
	t, n := make([]int64, size), make([]int, size)
	for i := 0; i < l.size; i++ {
		j := l.index(i)
		t[i], n[i] = l.t[j], l.n[j]
	}
	l.t, l.n, l.head = t, n, 0
}

// Oldest returns the oldest timestamp that counts at the last Count or
// Allow, and false when there is none.
func (l *Log) Oldest() (int64, bool) {
	if l.size == 0 {
		return 0, false
	}
	return l.t[l.head], true
}
