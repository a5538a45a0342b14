package memstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

var sliding10 = window.Spec{Size: 10 * time.Second}

const sec = int64(time.Second)

func TestSyncMergesOutOfOrderPushes(t *testing.T) {
	k := NewKey(100, sliding10)
	k.Sync(5*sec, store.Push{Gateway: 1, Admits: []int64{2 * sec, 4 * sec}})
	k.Sync(6*sec, store.Push{Gateway: 0, Admits: []int64{1 * sec, 3 * sec, 5 * sec}})
	p := k.Sync(6*sec, store.Push{Gateway: 2, Admits: []int64{3 * sec}})
	if p.Count != 6 || p.Own != 1 {
		t.Fatalf("count %d own %d, want 6 and 1", p.Count, p.Own)
	}
	got := k.Stamps(nil, 6*sec)
	want := []int64{1 * sec, 2 * sec, 3 * sec, 3 * sec, 4 * sec, 5 * sec}
	if !slices.Equal(got, want) {
		t.Fatalf("log %v, want %v", got, want)
	}
	// At 12.5s the stamps at 1s and 2s have left.
	p = k.Sync(12500*int64(time.Millisecond), store.Push{Gateway: 0, Horizon: sec})
	if p.Count != 4 || p.Own != 2 {
		t.Fatalf("after ageing: count %d own %d, want 4 and 2", p.Count, p.Own)
	}
	// Leaving before 13.5s: those < 3.5s.
	if !slices.Equal(p.Expiring, []int64{3 * sec, 3 * sec}) {
		t.Fatalf("expiring %v", p.Expiring)
	}
}

func TestSyncDropsStampsAlreadyOut(t *testing.T) {
	k := NewKey(100, sliding10)
	p := k.Sync(20*sec, store.Push{Admits: []int64{5 * sec, 15 * sec}})
	if p.Count != 1 {
		t.Fatalf("count %d, want 1", p.Count)
	}
}

func TestFixedWindowExpiring(t *testing.T) {
	k := NewKey(100, window.Spec{Size: 10 * time.Second, Kind: window.Fixed})
	k.Sync(1*sec, store.Push{Admits: []int64{0, sec}})
	if p := k.Sync(2*sec, store.Push{Horizon: sec}); len(p.Expiring) != 0 || p.Count != 2 {
		t.Fatalf("mid-window: %+v", p)
	}
	// The boundary at 10s is within 9.5s + 1s: all of the window leaves.
	if p := k.Sync(9500*int64(time.Millisecond), store.Push{Horizon: sec}); len(p.Expiring) != 2 {
		t.Fatalf("near the boundary: %+v", p)
	}
	if n := k.Count(10 * sec); n != 0 {
		t.Fatalf("after the boundary count %d", n)
	}
}

func TestLeaseAccounting(t *testing.T) {
	k := NewKey(10, sliding10)
	if g := k.Sync(0, store.Push{Gateway: 0, Ask: 6}).Granted; g != 6 {
		t.Fatalf("first grant %d, want 6", g)
	}
	if g := k.Sync(0, store.Push{Gateway: 1, Ask: 6}).Granted; g != 4 {
		t.Fatalf("second grant %d, want 4: outstanding slots count as used", g)
	}
	if ok, _ := k.Central(1, 2, 1); ok {
		t.Fatal("central check admitted while grants fill the limit")
	}
	// Gateway 0 used 2 of its 6 and hands 4 back: 2 admitted + 4 held by 1.
	p := k.Sync(sec, store.Push{Gateway: 0, Admits: []int64{1, 2}, Ask: 10})
	if p.Granted != 4 || k.Outstanding() != 8 {
		t.Fatalf("after hand-back granted %d outstanding %d, want 4 and 8", p.Granted, k.Outstanding())
	}
	if g := k.Grant(sec, 2, 5); g != 0 {
		t.Fatalf("round-trip grant %d past the limit", g)
	}
	// At 10s+1ns the admits at 1 and 2 have left.
	if g := k.Grant(10*sec+2, 2, 5); g != 2 {
		t.Fatalf("round-trip grant after ageing %d, want 2", g)
	}
}

func TestCentral(t *testing.T) {
	k := NewKey(2, sliding10)
	for i, c := range []struct {
		at   int64
		n    int
		want bool
	}{{0, 1, true}, {1, 2, false}, {1, 1, true}, {2, 1, false}, {10 * sec, 1, true}, {10*sec + 1, 1, true}, {10*sec + 1, 1, false}, {10*sec + 1, 0, true}} {
		if got, _ := k.Central(c.at, 0, c.n); got != c.want {
			t.Fatalf("row %d: Central(%d, n=%d) = %v", i, c.at, c.n, got)
		}
	}
}

func TestTimeNeverGoesBack(t *testing.T) {
	k := NewKey(1, sliding10)
	k.Central(20*sec, 0, 1)
	if ok, _ := k.Central(5*sec, 0, 1); ok {
		t.Fatal("an earlier time reopened the window")
	}
}

func TestRetriedPushCountsOnce(t *testing.T) {
	k := NewKey(100, sliding10)
	k.Sync(sec, store.Push{Gateway: 3, Admits: []int64{1, 2, 3}, Seq: 1})
	// The answer was lost; the gateway retries with one more admit.
	p := k.Sync(2*sec, store.Push{Gateway: 3, Admits: []int64{1, 2, 3, 4}, Seq: 1})
	if p.Count != 4 || p.Own != 4 {
		t.Fatalf("after a retry: count %d own %d, want 4 and 4", p.Count, p.Own)
	}
	p = k.Sync(3*sec, store.Push{Gateway: 3, Admits: []int64{5}, Seq: 5})
	if p.Count != 5 {
		t.Fatalf("count %d, want 5", p.Count)
	}
}

// Max-min fair lease grants: asks below the equal share are met in full,
// the rest share what is left; never past the room.
func TestMaxMinLeases(t *testing.T) {
	k := NewKey(10, window.Spec{Size: 60e9})
	k.SetMaxMinLeases()
	asks := []int{1, 8, 8} // room 10: 1, then 4.5 each, floored
	got := make([]int, len(asks))
	for round := 0; round < 3; round++ { // the demands settle after one round of syncs
		for gw, a := range asks {
			got[gw] = k.Sync(int64(round*3+gw+1), store.Push{Gateway: gw, Ask: a}).Granted
		}
	}
	if fmt.Sprint(got) != "[1 4 4]" || k.Outstanding() > 10 {
		t.Fatalf("grants %v (outstanding %d), want [1 4 4]", got, k.Outstanding())
	}
}

// With counters a key holds at most one entry a bucket and a gateway,
// whatever the limit and the requests' costs; the exact log holds one an
// admit.
func TestCountersBoundTheEntries(t *testing.T) {
	const gateways, limit = 4, 10000
	for _, spec := range []window.Spec{{Size: time.Second}, {Size: time.Second, Buckets: 10}} {
		k := NewKey(limit, spec)
		now, most := int64(0), 0
		for i := range 50000 {
			now += int64(time.Millisecond) / 4
			gw := i % gateways
			if i%3 == 0 {
				k.Central(now, gw, 1+i%5)
			} else {
				k.Sync(now, store.Push{Gateway: gw, Admits: []int64{now - int64(time.Millisecond)}, Counts: []int{1000}})
			}
			most = max(most, k.Entries())
		}
		bound := gateways * (spec.Buckets + 2)
		if spec.Counters() && most > bound {
			t.Errorf("%v: %d entries held, want at most %d", spec, most, bound)
		}
		if !spec.Counters() && most <= bound {
			t.Errorf("%v: the exact log held only %d entries: the bound tests nothing", spec, most)
		}
	}
}
