package window

import (
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

func TestLogSliding(t *testing.T) {
	l := New(Spec{Size: time.Second, Kind: Sliding}, 2)
	for i, c := range []struct {
		at   int64
		want bool
	}{
		{0, true}, {500, true}, {999, false},
		{1000, true},  // 0 left: (t-W, t] excludes t-W
		{1000, false}, // 500 and 1000, 1000
		{1500, true},  // 500 left
		{1501, false},
	} {
		if got := l.Allow(c.at*ms, 1); got != c.want {
			t.Fatalf("row %d: Allow(%dms) = %v, want %v", i, c.at, got, c.want)
		}
	}
	if n := l.Count(2500 * ms); n != 0 {
		t.Fatalf("Count after the window = %d, want 0", n)
	}
}

func TestLogFixed(t *testing.T) {
	l := New(Spec{Size: time.Second, Kind: Fixed}, 2)
	for i, c := range []struct {
		at   int64
		want bool
	}{
		{900, true}, {950, true}, {999, false},
		{1000, true}, // a new window forgets everything
		{1001, true}, {1999, false}, {2000, true},
	} {
		if got := l.Allow(c.at*ms, 1); got != c.want {
			t.Fatalf("row %d: Allow(%dms) = %v, want %v", i, c.at, got, c.want)
		}
	}
}

func TestLogCost(t *testing.T) {
	l := New(Spec{Size: time.Second}, 5)
	if !l.Allow(0, 3) || l.Allow(1, 3) || !l.Allow(2, 2) || l.Allow(3, 1) {
		t.Fatal("costs: want 3 admitted, 3 refused, 2 admitted, 1 refused")
	}
	if l.Count(3) != 5 {
		t.Fatalf("Count = %d, want 5", l.Count(3))
	}
}

func TestLogNeverGrows(t *testing.T) {
	l := New(Spec{Size: time.Second}, 3)
	var now int64
	allocs := testing.AllocsPerRun(1000, func() {
		now += 100 * ms
		l.Allow(now, 1)
	})
	if allocs != 0 {
		t.Fatalf("Allow allocates %.1f times", allocs)
	}
	if len(l.t) != 3 {
		t.Fatalf("ring grew to %d", len(l.t))
	}
}

func TestLogGrowsOnDemand(t *testing.T) {
	l := New(Spec{Size: time.Second}, 1<<30)
	if len(l.t) > 16 {
		t.Fatalf("a new log holds %d slots", len(l.t))
	}
	for i := int64(0); i < 100; i++ {
		if !l.Allow(i, 1) {
			t.Fatal("refused under the limit")
		}
	}
	if l.Count(100) != 100 || len(l.t) > 128 {
		t.Fatalf("count %d ring %d", l.Count(100), len(l.t))
	}
}

func TestLogAddKeepsTheLatest(t *testing.T) {
	l := New(Spec{Size: time.Second}, 3)
	for _, at := range []int64{0, 100, 200, 300, 400} {
		l.Add(at*ms, 1)
	}
	if l.Count(400*ms) != 3 {
		t.Fatalf("count %d, want 3 (capped)", l.Count(400*ms))
	}
	// The three kept are 200, 300, 400: at 1.2s two remain.
	if got := l.Count(1200 * ms); got != 2 {
		t.Fatalf("at 1.2s count %d, want 2 (the latest were kept)", got)
	}
}

func TestSpec(t *testing.T) {
	s := Spec{Size: 10, Kind: Fixed}
	for _, c := range []struct{ now, lo, reset int64 }{{0, 0, 10}, {9, 0, 10}, {10, 10, 20}, {-1, -10, 0}} {
		if s.Lo(c.now) != c.lo || s.Reset(c.now, c.lo) != c.reset {
			t.Fatalf("fixed at %d: Lo %d Reset %d, want %d %d", c.now, s.Lo(c.now), s.Reset(c.now, c.lo), c.lo, c.reset)
		}
	}
	s.Kind = Sliding
	if s.Lo(10) != 1 || s.Reset(10, 3) != 13 {
		t.Fatalf("sliding: Lo(10) = %d, Reset = %d", s.Lo(10), s.Reset(10, 3))
	}
	for _, k := range []string{"sliding", "fixed"} {
		if got, err := ParseKind(k); err != nil || got.String() != k {
			t.Fatalf("ParseKind(%q) = %v, %v", k, got, err)
		}
	}
	if _, err := ParseKind("tumbling"); err == nil {
		t.Fatal("ParseKind accepted tumbling")
	}
}

// A request of any cost is one entry: memory does not follow the cost.
func TestLogHeavyRequestIsOneEntry(t *testing.T) {
	l := New(Spec{Size: time.Second}, 1<<32)
	if !l.Allow(0, 1<<31-1) || l.Count(0) != 1<<31-1 || len(l.t) > 16 {
		t.Fatalf("count %d ring %d after one request of cost 2^31-1", l.Count(0), len(l.t))
	}
	l.Add(ms, 1<<31)
	if l.Count(ms) != 1<<32-1 || l.size != 2 {
		t.Fatalf("count %d entries %d", l.Count(ms), l.size)
	}
	l.Add(2*ms, 5) // the oldest entry gives up 4 of its requests
	if l.Count(2*ms) != 1<<32 || l.size != 3 {
		t.Fatalf("count %d entries %d after a capped Add", l.Count(2*ms), l.size)
	}
	if l.Count(1000*ms) != 1<<31+5 {
		t.Fatalf("at 1s count %d, want the two later entries", l.Count(1000*ms))
	}
}
