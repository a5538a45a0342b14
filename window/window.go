// Package window holds the two window kinds of fleetlimit (sliding and fixed)
// and an exact sliding-window log of admitted timestamps.
//
// Times are int64 nanoseconds on whatever clock the caller uses; the package
// never reads a clock itself, starts no goroutine and does no I/O. A Log's
// memory is bounded by the most the window can hold.
package window

import (
	"fmt"
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

// Spec is a window: its length and its kind.
type Spec struct {
	Size time.Duration // W, > 0
	Kind Kind
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
// that grows on demand up to the limit: it never holds more than that many
// timestamps, and stops allocating once the window has been full.
// Timestamps must be added in non-decreasing order. The zero value is not
// usable; a Log is not safe for concurrent use.
type Log struct {
	spec  Spec
	limit int
	ring  []int64
	head  int // index of the oldest timestamp
	count int
}

// New returns a Log for spec that admits at most limit timestamps per window.
func New(spec Spec, limit int) *Log {
	limit = max(limit, 0)
	return &Log{spec: spec, limit: limit, ring: make([]int64, min(limit, 16))}
}

// Limit returns the most timestamps the log admits in one window.
func (l *Log) Limit() int { return l.limit }

// Count returns how many logged timestamps count at now, forgetting the
// ones that no longer do. now must not go backwards between calls.
func (l *Log) Count(now int64) int {
	lo := l.spec.Lo(now)
	for l.count > 0 && l.ring[l.head] < lo {
		l.head++
		if l.head == len(l.ring) {
			l.head = 0
		}
		l.count--
	}
	return l.count
}

// Allow admits n requests at now if the window then holds at most Limit
// timestamps, logging n copies of now; otherwise it logs nothing.
func (l *Log) Allow(now int64, n int) bool {
	if n <= 0 {
		return true
	}
	if l.Count(now)+n > l.limit {
		return false
	}
	l.push(now, n)
	return true
}

// Add logs n requests at now whatever the count, forgetting the oldest
// when the log is full: Count is then the true count capped at Limit.
func (l *Log) Add(now int64, n int) {
	l.Count(now)
	if n > l.limit {
		n = l.limit
	}
	for drop := l.count + n - l.limit; drop > 0; drop-- {
		l.head++
		if l.head == len(l.ring) {
			l.head = 0
		}
		l.count--
	}
	l.push(now, n)
}

// push appends n copies of now; the caller made room.
func (l *Log) push(now int64, n int) {
	if need := l.count + n; need > len(l.ring) {
		l.grow(need)
	}
	for i := 0; i < n; i++ {
		j := l.head + l.count
		if j >= len(l.ring) {
			j -= len(l.ring)
		}
		l.ring[j] = now
		l.count++
	}
}

func (l *Log) grow(need int) {
	size := min(max(2*len(l.ring), need), l.limit)
	ring := make([]int64, size)
	for i := 0; i < l.count; i++ {
		j := l.head + i
		if j >= len(l.ring) {
			j -= len(l.ring)
		}
		ring[i] = l.ring[j]
	}
	l.ring, l.head = ring, 0
}

// Oldest returns the oldest timestamp that counts at the last Count or
// Allow, and false when there is none.
func (l *Log) Oldest() (int64, bool) {
	if l.count == 0 {
		return 0, false
	}
	return l.ring[l.head], true
}
