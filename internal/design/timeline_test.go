package design_test

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// step is one row of a timeline: at ms, gateway gw either takes a request
// (want is "admit" or "reject", with "+rt" when the decision must wait on the
// store) or syncs (want is "sync"). held, when not -1, is the lease slots the
// gateway must hold afterwards.
type step struct {
	ms   int64
	gw   int
	want string
	held int
}

func r(ms int64, gw int, want string) step { return step{ms, gw, want, -1} }
func s(ms int64, gw int) step              { return step{ms, gw, "sync", -1} }
func h(ms int64, gw int, want string, held int) step {
	return step{ms, gw, want, held}
}

type timeline struct {
	design string
	k      int
	limit  int
	window time.Duration
	kind   window.Kind
	sync   time.Duration
	steps  []step
}

func (tl timeline) run(t *testing.T) {
	t.Helper()
	spec := window.Spec{Size: tl.window, Kind: tl.kind}
	key := memstore.NewKey(tl.limit, spec)
	gws := make([]design.Gateway, tl.k)
	for i := range gws {
		g, err := catalog.New(tl.design, design.Config{Limit: tl.limit, Window: spec, Gateways: tl.k, Gateway: i, Sync: tl.sync})
		if err != nil {
			t.Fatal(err)
		}
		gws[i] = g
	}
	for i, st := range tl.steps {
		now := st.ms * int64(time.Millisecond)
		g := gws[st.gw]
		var got string
		if st.want == "sync" {
			design.Sync(g, now, key.SyncTo)
			got = "sync"
		} else {
			d, q := g.Decide(now, 1)
			rt := ""
			if d == design.Ask {
				rt = "+rt"
				if q.Kind != store.QueryCentral && q.Kind != store.QueryGrant {
					t.Fatalf("step %d: ask with query kind %d", i, q.Kind)
				}
				d = g.Resume(now, 1, q, key.Answer(now, st.gw, q))
			}
			got = d.String() + rt
		}
		if got != st.want {
			t.Fatalf("step %d (t=%dms, gateway %d): got %s, want %s", i, st.ms, st.gw, got, st.want)
		}
		if st.held >= 0 && g.Held() != st.held {
			t.Fatalf("step %d (t=%dms, gateway %d): holds %d slots, want %d", i, st.ms, st.gw, g.Held(), st.held)
		}
	}
}

func TestTimelines(t *testing.T) {
	sec := time.Second
	for name, tl := range map[string]timeline{
		"central-log": {"central-log", 2, 2, 2 * sec, window.Sliding, sec, []step{
			r(0, 0, "admit+rt"),
			r(100, 1, "admit+rt"),
			r(200, 0, "reject+rt"),    // 2 in (t-W, t]
			r(2000, 1, "admit+rt"),    // the stamp at 0 left the window at 2000
			r(2050, 0, "reject+rt"),   // 100 and 2000 are in
			r(2100, 0, "admit+rt"),    // 100 left at 2100
			r(2100, 1, "reject+rt")}}, // same instant, window full again
		"split": {"split", 3, 10, 2 * sec, window.Sliding, sec, []step{
			r(0, 0, "admit"), r(100, 0, "admit"), r(200, 0, "admit"),
			r(300, 0, "admit"),  // 3 < 10/3: the fourth is admitted
			r(400, 0, "reject"), // 4 >= 3.33
			r(500, 1, "admit"),  // gateway 1 has its own quota
			s(1000, 0), s(1000, 1),
			r(1100, 0, "reject"), // a sync shares nothing
			r(2000, 0, "admit"),  // the admit at 0 has left
			r(2050, 0, "reject")}},
		"split K=32 admits 4 each": {"split", 32, 100, 60 * sec, window.Sliding, sec, []step{
			r(0, 5, "admit"), r(1, 5, "admit"), r(2, 5, "admit"), r(3, 5, "admit"), r(4, 5, "reject")}},
		"shared-counter": {"shared-counter", 2, 3, 2 * sec, window.Sliding, sec, []step{
			r(0, 0, "admit"), r(100, 0, "admit"),
			r(200, 1, "admit"), r(300, 1, "admit"), // gateway 1 knows nothing yet
			r(400, 0, "admit"),    // 0 known + 2 own < 3: the fleet is at 5, over L
			r(500, 0, "reject"),   // 0 + 3
			s(1000, 0),            // learns 3 (its own)
			s(1000, 1),            // learns 5
			r(1500, 0, "reject"),  // 3 known: synced before gateway 1 pushed
			r(2000, 0, "admit"),   // the stamp at 0 aged out between syncs: 2 + 0
			r(2050, 0, "reject"),  // 2 + 1
			r(2150, 0, "admit"),   // 100 aged out: 1 + 1
			r(2150, 1, "reject"),  // gateway 1 knew 5; 0 and 100 aged out: 3
			r(2250, 1, "admit")}}, // 200 aged out: 2
		// the same requests as shared-counter's above: the others' count is
		// not aged between pulls, and the own count is exact in the window
		"caddy-distributed": {"caddy-distributed", 2, 3, 2 * sec, window.Sliding, sec, []step{
			r(0, 0, "admit"), r(100, 0, "admit"),
			r(200, 1, "admit"), r(300, 1, "admit"), // gateway 1 knows nothing yet
			r(400, 0, "admit"),    // 0 others + 2 own < 3: the fleet is at 5, over L
			r(500, 0, "reject"),   // 0 + 3
			s(1000, 0),            // the store holds its 3: others 0
			s(1000, 1),            // others 3 (gateway 0's)
			r(1500, 0, "reject"),  // 0 + 3 own
			r(2000, 0, "admit"),   // its admit at 0 left: 0 + 2
			r(2050, 0, "reject"),  // 0 + 3
			r(2150, 1, "reject"),  // others 3, never aged, though 0 and 100 have left
			s(2200, 1),            // a new pull: of gateway 0's, only 400 is pushed and in: others 1
			r(2250, 1, "admit"),   // 1 + 1 own (300; 200 left at 2200)
			r(2260, 1, "reject"),  // 1 + 2
			r(2300, 1, "admit")}}, // 300 left: 1 + 1
		"shared-counter fixed window": {"shared-counter", 2, 2, 2 * sec, window.Fixed, sec, []step{
			r(0, 0, "admit"), r(1900, 1, "admit"), s(1950, 1), s(1950, 0),
			r(1990, 0, "reject"), // knows 2
			r(2000, 0, "admit"),  // a new fixed window: all forgotten at the boundary
			r(2001, 1, "admit"),
			r(2002, 1, "admit"), // it cannot know of 2000: the fleet has 3 in this window
			r(2003, 1, "reject")}},
		"extrapolate": {"extrapolate", 2, 3, 2 * sec, window.Sliding, sec, []step{
			r(0, 0, "admit"),    // 0 + 2x0
			r(100, 0, "admit"),  // 0 + 2x1 = 2 < 3
			r(200, 0, "reject"), // 0 + 2x2 = 4
			r(300, 1, "admit"),
			s(1000, 0),            // store has 0 and 100
			r(1100, 0, "admit"),   // 2 + 0
			r(1200, 0, "reject"),  // 2 + 2x1
			r(2000, 0, "reject"),  // 0 aged out: 1 + 2x1 = 3
			r(2100, 0, "admit")}}, // 100 aged out: 0 + 2
		"track-share": {"track-share", 2, 4, 10 * sec, window.Sliding, sec, []step{
			r(0, 0, "admit"),    // no data: share 1/K, 0/0.5
			r(100, 0, "admit"),  // 1/0.5 = 2
			r(200, 0, "reject"), // 2/0.5 = 4
			r(300, 1, "admit"),
			s(900, 1),              // store 1, own 1: share 1
			s(1000, 0),             // store 3, own 2: share 2/3
			r(1100, 0, "admit"),    // 3 + 0
			r(1200, 0, "reject"),   // 3 + 1/(2/3) = 4.5
			r(1300, 1, "admit"),    // 1 + 0
			r(1400, 1, "admit"),    // 1 + 1
			r(1500, 1, "admit"),    // 1 + 2
			r(1600, 1, "reject")}}, // 1 + 3
		"track-share floor": {"track-share", 2, 10, 10 * sec, window.Sliding, sec, []step{
			r(0, 0, "admit"), r(100, 0, "admit"), r(200, 0, "admit"), r(300, 0, "admit"),
			r(400, 0, "admit"),    // 4/0.5 = 8 < 10
			r(500, 0, "reject"),   // 5/0.5 = 10
			s(1000, 0),            // 5 of 5: share 1
			s(1000, 1),            // 0 of 5: share 0, floored at 1/(2K) = 0.25
			r(1100, 1, "admit"),   // 5 + 0
			r(1200, 1, "admit"),   // 5 + 1/0.25 = 9
			r(1300, 1, "reject"),  // 5 + 2/0.25 = 13
			r(1400, 0, "admit"),   // 5 + 0/1
			r(1500, 0, "admit")}}, // 5 + 1/1
		"headroom": {"headroom", 2, 10, 10 * sec, window.Sliding, sec, []step{
			r(0, 0, "admit+rt"),                      // the store has told it nothing: it asks
			r(100, 0, "admit+rt"),                    // told 1, but no arrivals yet: no budget
			s(1000, 0),                               // 2 arrivals over 10 intervals: needs ceil(2 x 0.2) + 1 = 2; share 1 of room 8
			r(1100, 0, "admit"), r(1200, 0, "admit"), // the budget of 2, locally
			r(1300, 0, "admit+rt"), // spent: it asks, carrying 1100 and 1200: the store counts 5
			r(1400, 1, "admit+rt"), r(1500, 1, "admit+rt"), r(1600, 1, "admit+rt"),
			r(1700, 1, "admit+rt"), r(1800, 1, "admit+rt"), // the answer says 10: full
			r(1900, 1, "reject"),    // and nothing known has aged out: rejected locally
			r(1960, 0, "reject+rt"), // gateway 0 knew 5, its budget is spent: asks
			r(1970, 0, "reject"),
			r(10050, 1, "reject"),   // 0 has left, but gateway 1 knew of no stamp leaving
			s(10050, 1),             // 9, and which stamps leave in the next 2 s
			r(10060, 1, "admit+rt"), // room 1, share 5/9 of it: no budget
			r(10070, 1, "reject"),   // full again
			r(10100, 1, "admit+rt"), // 100 has aged out: room again
			r(11100, 0, "reject")}}, // gateway 0 knew 10 and no stamp leaving
		"lease": {"lease", 2, 5, 10 * sec, window.Sliding, sec, []step{
			h(0, 0, "reject", 0), // no grant before the first sync, and a lease never asks
			h(0, 0, "sync", 2),   // 1 arrival over 10 intervals: r = 0.1, asks ceil(1.15) = 2
			h(0, 1, "sync", 1),   // idle: asks ceil(1) = 1
			h(100, 0, "admit", 1), h(200, 0, "admit", 0),
			h(300, 0, "reject", 0), // grant used up: no round trip
			h(1000, 0, "sync", 2),  // r = 0.4, asks 2: 5 - 2 admitted - 1 held by gateway 1 = 2
			h(1000, 1, "sync", 1),  // hands back its unused slot, asks 1: 5 - 2 - 2 = 1
			h(1100, 1, "admit", 0),
			h(1200, 0, "admit", 1), h(1300, 0, "admit", 0), h(1400, 0, "reject", 0),
			h(2000, 0, "sync", 0),   // asks ceil(1.5x0.7+1) = 3; 4 admitted + 1 outstanding = L: none
			h(2100, 0, "reject", 0), // the fleet has admitted exactly L
			h(2150, 1, "sync", 0),   // pushes 1100: 5 admitted
			h(10150, 0, "sync", 1),  // the admit at 100 aged out: room for one
			h(10200, 0, "admit", 0)}},
		"lease-ask": {"lease-ask", 2, 3, 10 * sec, window.Sliding, sec, []step{
			h(100, 0, "admit+rt", 0),  // empty grant: asks ceil(1.5x0+1) = 1 at once
			h(200, 0, "admit+rt", 0),  // and again
			h(300, 1, "admit+rt", 0),  // store: 0 admitted + 3 outstanding = L
			h(400, 1, "reject+rt", 0), // no room: rejects and stops asking
			h(500, 1, "reject", 0),    // until its next sync, no round trip
			h(1000, 0, "sync", 0),     // pushes 100, 200; asks 2; 2 + 1 outstanding: none
			h(1000, 1, "sync", 0),     // pushes 300; store full
			h(1100, 1, "reject+rt", 0),
			h(2000, 0, "sync", 0),      // idle interval: asks for nothing
			h(10100, 0, "admit+rt", 0), // 100 aged out: room for 1
		}},
	} {
		t.Run(name, func(t *testing.T) { tl.run(t) })
	}
}

// A live driver syncs asynchronously. Between SyncPush and SyncPull a lease
// gateway has handed its slots back and a grant would be forgotten by the
// sync, yet a request must not be rejected for that bookkeeping: it goes to
// the store's central check, which logs it there. Whichever reaches the store
// first, the push or the check, the store counts every admit once and never
// more than the limit.
func TestLeaseAsksTheCentralCheckDuringASync(t *testing.T) {
	for _, limit := range []int{3, 10} {
		for _, name := range []string{"lease", "lease-ask"} {
			for _, pushFirst := range []bool{false, true} {
				leaseDuringSync(t, name, limit, pushFirst)
			}
		}
	}
}

// leaseDuringSync runs two requests, a sync, then three requests while a
// second sync is in flight, on a key of the given limit.
func leaseDuringSync(t *testing.T, name string, limit int, pushFirst bool) {
	spec := window.Spec{Size: 10 * time.Second}
	key := memstore.NewKey(limit, spec)
	g, _ := design.New(name, design.Config{Limit: limit, Window: spec, Gateways: 1, Sync: time.Second})
	admits := 0
	for i := int64(1); i <= 2; i++ { // two arrivals, so the next sync asks for slots
		if v, q := g.Decide(i, 1); v == design.Ask {
			if g.Resume(i, 1, q, key.Answer(i, 0, q)) == design.Admit {
				admits++
			}
		}
	}
	design.Sync(g, 10, key.SyncTo) // pushes what it admitted, holds new slots
	var push store.Push
	g.SyncPush(20, &push) // hands every slot back; the sync is in flight
	if pushFirst {
		pull := key.Sync(21, push)
		g.SyncPull(25, &pull)
	}
	for i := int64(22); i < 25; i++ {
		v, q := g.Decide(i, 1)
		if v != design.Ask && !pushFirst {
			t.Fatalf("%s: request %d during a sync: %v, want the central check", name, i, v)
		}
		if v == design.Ask {
			v = g.Resume(i, 1, q, key.Answer(i, 0, q))
		}
		if v == design.Admit {
			admits++
		}
	}
	if !pushFirst {
		pull := key.Sync(25, push)
		g.SyncPull(25, &pull)
	}
	design.Sync(g, 30, key.SyncTo)
	if c := key.Count(30); c != admits || key.Outstanding()+c > limit {
		t.Errorf("%s (push first %v): store counts %d with %d outstanding; the gateway admitted %d of a limit of %d",
			name, pushFirst, c, key.Outstanding(), admits, limit)
	}
	// With room for the held slots and every request, none is rejected
	// for the sync in flight. lease rejects by its own rule its first two
	// (it holds no slot yet) and, once the sync is done, the third past
	// its two new slots.
	want := 5
	if name == "lease" {
		want = 3
		if pushFirst {
			want = 2
		}
	}
	if limit == 10 && admits != want {
		t.Errorf("%s (push first %v): admitted %d of 5 requests under a limit of 10, want %d", name, pushFirst, admits, want)
	}
}
