package design

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// A lease over a long window keeps at most MaxLeaseBuckets counters, and
// still sizes its ask on its arrivals per sync interval.
func TestLeaseMemoryIsBounded(t *testing.T) {
	year := 365 * 24 * time.Hour
	for _, sync := range []time.Duration{time.Nanosecond, time.Millisecond, time.Second} {
		g := newLease(Config{Limit: 1 << 30, Window: window.Spec{Size: year}, Gateways: 2, Sync: sync}, true).(*lease)
		if len(g.arr.intervals) > MaxLeaseBuckets {
			t.Fatalf("Δ=%v: %d counters for a year's window", sync, len(g.arr.intervals))
		}
	}
	// Δ = 1 s over a day: 86,400 intervals share 4,096 buckets of 22.
	g := newLease(Config{Limit: 1 << 30, Window: window.Spec{Size: 24 * time.Hour}, Gateways: 2, Sync: time.Second}, false).(*lease)
	if g.arr.span != 22 {
		t.Fatalf("span %d, want 22", g.arr.span)
	}
	for i := 0; i < 3*86400; i++ { // 10 arrivals every interval, three days long
		g.cur = 10
		var push store.Push
		g.SyncPush(int64(i)*int64(time.Second), &push)
		g.SyncPull(int64(i)*int64(time.Second), &pullNothing)
	}
	if w := g.want(); w < 15 || w > 16 { // ceil(1.5 * ~10 + 1), give or take a bucket's share
		t.Fatalf("want %d after a steady 10 per interval, want about 16", w)
	}
	g.Skip(1 << 40) // a long idle stretch forgets everything, at once
	if g.arr.sum != 0 || g.want() != 1 {
		t.Fatalf("after a long skip: sum %d want %d", g.arr.sum, g.want())
	}
}

var pullNothing = store.Pull{}

// TestEmptyAheadKeptAcrossCloses holds emptyAhead, which keeps its last
// scan while closes move towards the bucket it found, and the closes that
// use it, to a twin ring that never keeps one, after random closes, empty
// and not.
func TestEmptyAheadKeptAcrossCloses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, buckets := range []int{1, 2, 7, 60} {
		a := arrivals{intervals: make([]int, buckets), span: 1}
		b := arrivals{intervals: make([]int, buckets), span: 1}
		for step := range 20_000 {
			b.ahead = false
			switch c, n := rng.IntN(2), 1+rng.IntN(buckets+1); rng.IntN(4) {
			case 0:
				a.closeInterval(c)
				b.closeInterval(c)
			case 1:
				a.closeEmpty(n)
				b.closeEmpty(n)
			default:
				a.closeInterval(0)
				b.closeInterval(0)
			}
			if a.sum != b.sum || a.next != b.next || !slices.Equal(a.intervals, b.intervals) {
				t.Fatalf("%d buckets, step %d: ring %v next %d sum %d, its twin %v %d %d", buckets, step, a.intervals, a.next, a.sum, b.intervals, b.next, b.sum)
			}
			if rng.IntN(3) == 0 {
				continue // leave the kept scan to age
			}
			b.ahead = false
			if got, want := a.emptyAhead(), b.emptyAhead(); got != want {
				t.Fatalf("%d buckets, step %d: emptyAhead %d, a fresh scan %d", buckets, step, got, want)
			}
		}
	}
}

// TestCloseEmptyEqualsClosingOneByOne holds closeEmpty's skip of n empty
// intervals to n closes of none, on rings of a bucket an interval and of
// shared buckets, from random states, n running past the ring.
func TestCloseEmptyEqualsClosingOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, shape := range []struct{ buckets, span int }{{1, 1}, {7, 1}, {60, 1}, {600, 1}, {5, 3}, {64, 22}} {
		a := arrivals{intervals: make([]int, shape.buckets), span: shape.span}
		b := arrivals{intervals: make([]int, shape.buckets), span: shape.span}
		for step := range 3000 {
			if rng.IntN(2) == 0 {
				c := rng.IntN(4)
				a.closeInterval(c)
				b.closeInterval(c)
				continue
			}
			n := 1 + rng.IntN(shape.buckets*shape.span+2)
			a.closeEmpty(n)
			for range n {
				b.closeInterval(0)
			}
			if a.sum != b.sum || a.next != b.next || a.filled != b.filled || !slices.Equal(a.intervals, b.intervals) {
				t.Fatalf("%+v, step %d, skip %d: ring %v next %d filled %d sum %d, closed one by one %v %d %d %d",
					shape, step, n, a.intervals, a.next, a.filled, a.sum, b.intervals, b.next, b.filled, b.sum)
			}
		}
	}
}
