package design

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// counterFleet is one central-counter gateway on a memstore key, L = 10 a
// minute, deciding at whole seconds.
func counterFleet(t *testing.T) (Gateway, *memstore.Key, func(sec int64, down bool) Verdict) {
	t.Helper()
	spec := window.Spec{Size: time.Minute, Kind: window.Fixed}
	key := memstore.NewKey(10, spec)
	gw, err := New("central-counter", Config{Limit: 10, Window: spec, Gateways: 1, Sync: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(sec int64, down bool) Verdict {
		now := sec * int64(time.Second)
		if down {
			return gw.Fallback(now, 1)
		}
		v, q := gw.Decide(now, 1)
		if v == Ask {
			v = gw.Resume(now, 1, q, key.Answer(now, 0, q))
		}
		return v
	}
	return gw, key, decide
}

// The fallback's admits reach the store's counter with the next query, so
// a window that the fallback filled stays full once the store is back
// (the nemesis found 2 L in one window).
func TestCounterFallbackAdmitsReachTheCounter(t *testing.T) {
	_, _, decide := counterFleet(t)
	admitted := 0
	for s := int64(1); s <= 20; s++ {
		if decide(s, true) == Admit {
			admitted++
		}
	}
	for s := int64(21); s <= 40; s++ {
		if decide(s, false) == Admit {
			admitted++
		}
	}
	if admitted != 10 {
		t.Fatalf("the window admitted %d with L = 10, the first half by the fallback", admitted)
	}
}

// A counter the store lost within its window starts again from 0; the
// gateway counts from what it heard before (the nemesis found 2 L).
func TestCounterLostMidWindowKeepsItsCount(t *testing.T) {
	_, key, decide := counterFleet(t)
	admitted := 0
	for s := int64(1); s <= 8; s++ {
		if decide(s, false) == Admit {
			admitted++
		}
	}
	key.Forget(int64(9 * time.Second))
	for s := int64(10); s <= 30; s++ {
		if decide(s, false) == Admit {
			admitted++
		}
	}
	if admitted != 10 {
		t.Fatalf("the window admitted %d with L = 10 and the counter lost after 8", admitted)
	}
	// the next window starts afresh
	if v := decide(61, false); v != Admit {
		t.Fatalf("the next window's first request: %v", v)
	}
}
