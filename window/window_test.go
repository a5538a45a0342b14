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

func TestSpecValidate(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string // "" for valid
	}{
		{Spec{Size: time.Minute}, ""},
		{Spec{Size: time.Minute, Buckets: 60}, ""},
		{Spec{Size: time.Second, Buckets: 7}, ""},
		{Spec{Size: time.Minute, Kind: Fixed, Buckets: 1}, ""},
		{Spec{Size: 0}, "window 0s: want a positive length"},
		{Spec{Size: time.Minute, Kind: Kind(7)}, "window kind Kind(7): want sliding or fixed"},
		{Spec{Size: time.Minute, Buckets: -1}, "window buckets -1: want 0 (the exact log) to 3600"},
		{Spec{Size: time.Hour, Buckets: 3601}, "window buckets 3601: want 0 (the exact log) to 3600"},
		{Spec{Size: time.Minute, Kind: Fixed, Buckets: 60}, "window buckets 60: a fixed window is one counter, so want 0 (the exact log) or 1"},
		{Spec{Size: 5 * time.Microsecond, Buckets: 6}, "window buckets 6: a 5µs window has room for at most 5 buckets of a microsecond"},
	} {
		err := c.spec.Validate()
		if got := errText(err); got != c.want {
			t.Errorf("%+v: Validate() = %q, want %q", c.spec, got, c.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestSpecStamp(t *testing.T) {
	s := Spec{Size: time.Second, Buckets: 7} // buckets of 142,858 µs
	if w := s.Width(); w != 142858*int64(time.Microsecond) {
		t.Fatalf("width %d", w)
	}
	w := s.Width()
	for _, at := range []int64{0, 1, w - 1, w, 5*w + 3, -1, -w, -w - 1} {
		st := s.Stamp(at)
		if st < at || st-at >= w || s.Bucket(st) != s.Bucket(at) || s.Stamp(st) != st {
			t.Errorf("Stamp(%d) = %d: want the last instant of its bucket", at, st)
		}
	}
	f := Spec{Size: time.Second, Kind: Fixed, Buckets: 1}
	if got := f.Stamp(1500 * ms); got != 2000*ms-1 {
		t.Errorf("fixed Stamp(1.5s) = %d, want the window's last instant", got)
	}
	if exact := (Spec{Size: time.Second}); exact.Stamp(123) != 123 {
		t.Error("the exact log stamps an admit at its own time")
	}
}

func TestParseCounting(t *testing.T) {
	for in, want := range map[string]Spec{"sliding": {}, "fixed": {Kind: Fixed}, "sliding/60": {Buckets: 60}, "fixed/1": {Kind: Fixed, Buckets: 1}} {
		k, b, err := ParseCounting(in)
		if err != nil || k != want.Kind || b != want.Buckets {
			t.Errorf("ParseCounting(%q) = %v, %d, %v", in, k, b, err)
		}
		if got := (Spec{Size: time.Second, Kind: k, Buckets: b}).String(); got != in {
			t.Errorf("String() = %q, want %q", got, in)
		}
	}
	for _, in := range []string{"sliding/", "sliding/0", "sliding/x", "tumbling/3"} {
		if _, _, err := ParseCounting(in); err == nil {
			t.Errorf("ParseCounting(%q) took it", in)
		}
	}
}

// With counters a log never counts less than the exact log of the same
// admits, and counts an admit at most one bucket longer; and it holds one
// entry a bucket, whatever the limit.
func TestCountersBoundTheExactLog(t *testing.T) {
	for _, spec := range []Spec{{Size: time.Second, Buckets: 10}, {Size: time.Second, Buckets: 3}, {Size: time.Second, Kind: Fixed, Buckets: 1}} {
		const limit = 1 << 20
		exact, ctr := New(Spec{Size: spec.Size, Kind: spec.Kind}, limit), New(spec, limit)
		longer := New(Spec{Size: spec.Size + time.Duration(spec.Width()), Kind: spec.Kind}, limit)
		now := int64(0)
		for i := range 20000 {
			now += int64(i*7919%97) * ms / 10
			n := 1 + i%3
			exact.Add(now, n)
			ctr.Add(now, n)
			longer.Add(now, n)
			e, c, l := exact.Count(now), ctr.Count(now), longer.Count(now)
			if c < e || (spec.Kind == Sliding && c > l) {
				t.Fatalf("%v at %d: counters count %d, exact %d, a window one bucket longer %d", spec, now, c, e, l)
			}
			if spec.Kind == Fixed && c != e {
				t.Fatalf("%v at %d: one counter a fixed window counts %d, the exact log %d", spec, now, c, e)
			}
			if ctr.size > spec.Buckets+2 {
				t.Fatalf("%v: %d entries held", spec, ctr.size)
			}
		}
	}
}
