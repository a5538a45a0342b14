package design_test

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// permit, L = 30: a spare of 3 (floor(0.1 L)), of which syncs lend 2 and 1
// is kept for the central checks. Each row says which rule it shows.
func TestPermitTimeline(t *testing.T) {
	steps := []step{h(0, 0, "admit+rt", 0)} // no slot before a sync: the central check
	for i := range 26 {
		steps = append(steps, r(10+int64(i), 2, "admit+rt")) // the window holds 27
	}
	steps = append(steps,
		// one arrival in its one interval: asks ceil(1 + 3) + 1 = 5, and
		// the store lends beyond L: 27 + 5 = 32 = L + 2
		h(1000, 0, "sync", 5),
		r(1100, 1, "admit+rt"),  // 28 admitted + 5 lent + 1 <= L + 3: the kept spare
		r(1200, 1, "reject+rt"), // the window has room for 2, but with the lent slots it would pass L + 3
		r(1250, 1, "reject"),    // and only syncs return slots: alone until its next pull
	)
	for i := range 5 {
		steps = append(steps, h(1300+100*int64(i), 0, "admit", 4-i)) // the slots, locally
	}
	steps = append(steps,
		// the window now holds 33 = L + spare, the most any flood can
		// reach; 6 arrivals over 2 intervals ask 10, and none is left
		h(2000, 0, "sync", 0),
	)
	// the pull said 33 > L: gateway 0 refuses alone, without a round
	// trip, until a stamp it was told of leaves; a gateway never told
	// asks, and the store refuses it for a full window
	for i := range 6 {
		steps = append(steps, h(2100+int64(i), 0, "reject", 0))
	}
	steps = append(steps,
		r(2200, 2, "reject+rt"),
		// at 10.3 s only 1100 and the five slots are left in the window;
		// gateway 0's push reports its six refusals, with the store's one
		// past 2 x spare: the key is contended, no slot at all
		h(10300, 0, "sync", 0),
		// the central check still admits within L; the window is less
		// than half full, but a contended key tops up no slot
		h(10400, 0, "admit+rt", 0),
		// the reported refusals count in the epoch of the report (10-20 s)
		// and the next: still contended
		h(20500, 0, "sync", 0),
		// a window later the key is calm: 9 slots (13 arrivals, the
		// refused ones too, over 5 intervals: ceil(2.6 + 4.84) + 1)
		h(30500, 0, "sync", 9),
	)
	for i := range 9 {
		steps = append(steps, h(30600+100*int64(i), 0, "admit", 8-i))
	}
	steps = append(steps,
		// the slots ran out within the interval: the central check admits,
		// and with the window less than half full and the key calm it
		// tops up what a sync would ask, within L (1 + 9 out + 9 <= 30)
		h(31500, 0, "admit+rt", 9),
	)
	timeline{"permit", 3, 30, 10 * time.Second, window.Sliding, time.Second, steps}.run(t)
}

// A permit gateway asks for slots while anything reached it in the last
// five windows, and for none after.
func TestPermitStopsAskingWhenIdle(t *testing.T) {
	spec := window.Spec{Size: 10 * time.Second}
	key := memstore.NewKey(30, spec)
	g, err := design.New("permit", design.Config{Limit: 30, Window: spec, Gateways: 2, Sync: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sec := int64(time.Second)
	if d, _ := g.Decide(0, 1); d != design.Ask {
		t.Fatalf("a first request with no slot: %v, want ask", d)
	}
	for i := int64(1); i <= 52; i++ {
		design.Sync(g, i*sec, key.SyncTo)
		switch want := i <= 50; {
		case want && g.Held() < 1:
			t.Fatalf("sync %d, %d s after its arrival: holds %d, want at least 1", i, i, g.Held())
		case !want && g.Held() != 0:
			t.Fatalf("sync %d, %d s after its arrival (past 5 windows): holds %d, want 0", i, i, g.Held())
		}
	}
}

// TestPermitReserve: the spare a sync lends is floor(t L) less the reserve,
// which is clamped to the spare; NewPermit keeps a fifth, at least one.
func TestPermitReserve(t *testing.T) {
	c := design.Config{Limit: 100, Window: window.Spec{Size: time.Minute}, Gateways: 4, Sync: time.Second}
	lends := func(g design.Gateway) int32 {
		var p store.Push
		g.SyncPush(0, &p)
		return int32(p.Spare)
	}
	for _, tc := range []struct {
		reserve int
		want    int32
	}{{-1, 10}, {0, 10}, {1, 9}, {2, 8}, {10, 0}, {11, 0}} {
		if got := lends(design.NewPermitReserve(c, 0.1, tc.reserve)); got != tc.want {
			t.Errorf("reserve %d: a sync lends %d, want %d", tc.reserve, got, tc.want)
		}
	}
	if got := lends(design.NewPermit(c, 0.1)); got != 8 {
		t.Errorf("NewPermit lends %d of a spare of 10, want 8", got)
	}
	for spare, want := range map[int]int{0: 0, 1: 1, 5: 1, 10: 2, 11: 3} {
		if got := design.PermitReserve(spare); got != want {
			t.Errorf("PermitReserve(%d) = %d, want %d", spare, got, want)
		}
	}
}
