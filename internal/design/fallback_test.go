package design_test

import (
	"sort"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// fallbackDesigns are the designs whose fallback remembers the store's
// count: every one but split, whose rule is its own fallback.
var fallbackDesigns = []string{"central-log", "shared-counter", "extrapolate", "track-share", "headroom"}

// Every design's Fallback starts from the count the store last reported:
// with 20 of L = 40 counted and K = 4, a gateway admits ceil(20/4) = 5 on
// its own, not a fresh quota of 10; once a whole window has passed without
// the store, the store's old count has left and it admits its quota of 10
// a window. Its admits reach the store at the next sync, once.
func TestFallbackRemembersTheCount(t *testing.T) {
	const sec = int64(time.Second)
	for _, name := range fallbackDesigns {
		t.Run(name, func(t *testing.T) {
			spec := window.Spec{Size: 10 * time.Second}
			key := memstore.NewKey(40, spec)
			// gateway 0 of another design admitted 19 at 0.5 s
			key.Sync(sec/2, store.Push{Gateway: 0, Admits: []int64{sec / 2}, Counts: []int{19}, Seq: 1})
			g, err := design.New(name, design.Config{Limit: 40, Window: spec, Gateways: 4, Gateway: 1, Sync: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// one request by the design's own rule at 1 s, then a sync at
			// 2 s: the gateway's view is the store's 20
			v, q := g.Decide(sec, 1)
			if v == design.Ask {
				v = g.Resume(sec, 1, q, key.Answer(sec, 1, q))
			}
			if v != design.Admit {
				t.Fatalf("the first request: %v", v)
			}
			design.Sync(g, 2*sec, key.SyncTo)
			fell := 0
			for range 20 {
				if g.Fallback(3*sec, 1) == design.Admit {
					fell++
				}
			}
			if fell != 5 {
				t.Fatalf("the fallback admitted %d with 20 of 40 counted at K = 4, want ceil(20/4) = 5", fell)
			}
			if left, _ := g.View(3*sec, true); left != 0 {
				t.Fatalf("the fallback's view says %d left, want 0", left)
			}
			// a window after the last word from the store, only its own
			// admits of the last window count: the quota, ceil(40/4)
			fell = 0
			for range 20 {
				if g.Fallback(13*sec+1, 1) == design.Admit {
					fell++
				}
			}
			if fell != 10 {
				t.Fatalf("a window on, the fallback admitted %d, want the quota of 10", fell)
			}
			design.Sync(g, 14*sec, key.SyncTo)
			design.Sync(g, 14*sec+1, key.SyncTo)
			if got := key.Count(14*sec + 1); got != 10 {
				t.Fatalf("the store holds %d admits at 14 s, want the fallback's 10 of 13 s, pushed once", got)
			}
		})
	}
}

// A fleet whose gateways all heard the store's count just before it went
// away never admits, while every gateway falls back, more than the room the
// store had left, plus the rounding, K − 1: a window that ends during the
// outage holds at most max(L, its admits from before) + K − 1, under a
// flood at every gateway for two windows, for every design. (The old
// fallback, a fresh quota of ceil(L/K) a gateway, let up to
// (K − 1) ceil(L/K) more through.)
func TestFallbackFleetBound(t *testing.T) {
	const (
		limit = 100
		k     = 4
	)
	ms := int64(time.Millisecond)
	spec := window.Spec{Size: 10 * time.Second}
	for _, name := range design.Sliding() {
		t.Run(name, func(t *testing.T) {
			key := memstore.NewKey(limit, spec)
			gws := make([]design.Gateway, k)
			for i := range gws {
				gws[i], _ = design.New(name, design.Config{Limit: limit, Window: spec, Gateways: k, Gateway: i, Sync: time.Second})
			}
			var admits []int64
			decide := func(now int64, i int, down bool) {
				g := gws[i]
				var v design.Verdict
				if down {
					v = g.Fallback(now, 1)
				} else {
					var q store.Query
					if v, q = g.Decide(now, 1); v == design.Ask {
						v = g.Resume(now, 1, q, key.Answer(now, i, q))
					}
				}
				if v == design.Admit {
					admits = append(admits, now)
				}
			}
			// 6 s of a flood with the store up, syncing every second,
			// then two rounds of syncs: every view is the store's
			now := int64(0)
			for ; now < 6000*ms; now += 5 * ms {
				decide(now, int(now/(5*ms))%k, false)
				if now%(1000*ms) == 0 {
					for i := range gws {
						design.Sync(gws[i], now, key.SyncTo)
					}
				}
			}
			for range 2 {
				for i := range gws {
					design.Sync(gws[i], now, key.SyncTo)
				}
			}
			// the store is gone for 20 s: the flood goes on, each gateway
			// on its fallback
			before := len(admits)
			for end := now + 20000*ms; now < end; now += 5 * ms {
				decide(now, int(now/(5*ms))%k, true)
			}
			worst := 0
			for i := before; i < len(admits); i++ {
				in, pre := inWindow(admits[:i+1], admits[i], int64(spec.Size)), inWindow(admits[:before], admits[i], int64(spec.Size))
				if in > max(limit, pre)+k-1 {
					t.Fatalf("the window ending at %v holds %d admits, %d of them from before the outage: want at most max(L = %d, %d) + K − 1", time.Duration(admits[i]), in, pre, limit, pre)
				}
				worst = max(worst, in-max(limit, pre))
			}
			t.Logf("%d fallback admits, at most %d past max(L, the admits from before) in a window", len(admits)-before, worst)
		})
	}
}

// inWindow counts the stamps of ts (ascending) in (t − w, t].
func inWindow(ts []int64, t, w int64) int {
	lo := sort.Search(len(ts), func(i int) bool { return ts[i] > t-w })
	hi := sort.Search(len(ts), func(i int) bool { return ts[i] > t })
	return hi - lo
}

// The local record keeps the admits a sync has in flight for the next sync.
func TestFallbackAdmitsDuringASyncArePushedNext(t *testing.T) {
	spec := window.Spec{Size: time.Minute}
	key := memstore.NewKey(100, spec)
	g, _ := design.New("shared-counter", design.Config{Limit: 100, Window: spec, Gateways: 2, Gateway: 0, Sync: time.Second})
	g.Fallback(1, 1)
	var p store.Push
	g.SyncPush(2, &p)
	g.Fallback(3, 1) // while the sync is in flight
	pull := key.Sync(2, p)
	g.SyncPull(4, &pull)
	if n := key.Count(4); n != 1 {
		t.Fatalf("after the first sync the store holds %d, want 1", n)
	}
	if g.SyncPush(5, &p); len(p.Admits) != 1 || p.Admits[0] != 3 || p.Seq != 2 {
		t.Fatalf("second push %+v, want the admit at 3 numbered 2", p)
	}
}

// A store that forgets the key mid-window (memstore.Key.Forget, as Redis
// restarted without persistence or flushed): every gateway tells from the
// key's life in its next pull or answer that the store lost what it held,
// re-seeds its own admits of the window from its history, and keeps the
// count it remembered as a floor until the store's count comes back. After
// every gateway's first sync since the loss the store counts every admit
// of the window again. Under a flood of six times L, the exact designs
// stay within L + K; the others within what they admit without the loss
// plus one sync interval's arrivals.
func TestForgottenKeyIsReseeded(t *testing.T) {
	exact := map[string]bool{"central-log": true, "lease": true, "lease-ask": true, "headroom": true}
	for _, name := range design.Sliding() {
		t.Run(name, func(t *testing.T) {
			const limit, k, perSync = 60, 3, 200 // arrivals in one sync interval
			kept := forgetRun(t, name, false)
			lost := forgetRun(t, name, true)
			bound := max(kept, limit) + perSync
			if exact[name] {
				bound = limit + k
			}
			if lost > bound {
				t.Fatalf("worst window %d with the loss (%d without), over %d", lost, kept, bound)
			}
			t.Logf("worst window %d of L = %d with the loss, %d without", lost, limit, kept)
		})
	}
}

// forgetRun floods three gateways of a design, L = 60 per 10 s, syncing
// every second, for 12 s, the store forgetting the key at 5.5 s when
// forget is set, and returns the worst window.
func forgetRun(t *testing.T, name string, forget bool) int {
	const (
		limit = 60
		k     = 3
	)
	ms := int64(time.Millisecond)
	spec := window.Spec{Size: 10 * time.Second}
	key := memstore.NewKey(limit, spec)
	gws := make([]design.Gateway, k)
	for i := range gws {
		gws[i], _ = design.New(name, design.Config{Limit: limit, Window: spec, Gateways: k, Gateway: i, Sync: time.Second, Mend: true})
	}
	var admits []int64
	for now := int64(0); now < 12000*ms; now += 5 * ms {
		for j := range gws {
			if now%(1000*ms) == int64(j)*300*ms { // gateway j syncs at j × 0.3 s past each second
				f := gws[j].(design.Forgetful)
				before := f.Forgotten()
				design.Sync(gws[j], now, key.SyncTo)
				if f.Forgotten() != before { // re-seed at once, as the limiter does
					design.Sync(gws[j], now, key.SyncTo)
				}
			}
		}
		if now == 5500*ms && forget {
			key.Forget(now)
		}
		if now == 7000*ms { // every gateway has synced since the loss
			lo := spec.Lo(now)
			in := len(admits) - sort.Search(len(admits), func(j int) bool { return admits[j] >= lo })
			if got := key.Count(now); got < in {
				t.Fatalf("at 7 s the store counts %d of the %d admits in the window: the re-seeds left some out", got, in)
			}
		}
		i := int(now/(5*ms)) % k
		v, q := gws[i].Decide(now, 1)
		if v == design.Ask {
			v = gws[i].Resume(now, 1, q, key.Answer(now, i, q))
		}
		if v == design.Admit {
			admits = append(admits, now)
		}
	}
	want := map[bool]int{false: 0, true: 1}[forget]
	for i, g := range gws {
		if n := g.(design.Forgetful).Forgotten(); n != want {
			t.Fatalf("gateway %d found the store had forgotten the key %d times, want %d", i, n, want)
		}
	}
	worst := 0
	for _, a := range admits {
		worst = max(worst, inWindow(admits, a, int64(spec.Size)))
	}
	return worst
}

// central-log notes an answer without a call (the simulator's, with no
// store failures) and takes it into its view only when the view is read: a
// gateway that does so and one that takes every answer at once (Mend)
// decide, view and fall back alike, through answers, syncs, other
// gateways' admits and stamps leaving the window.
func TestCentralLogNotedAnswersTellTheSame(t *testing.T) {
	spec := window.Spec{Size: 10 * time.Second}
	const limit, k = 50, 4
	var gws [2]design.Gateway
	var keys [2]*memstore.Key
	for i, mend := range []bool{false, true} {
		keys[i] = memstore.NewKey(limit, spec)
		g, err := design.New("central-log", design.Config{Limit: limit, Window: spec, Gateways: k, Gateway: 1, Sync: time.Second, Mend: mend})
		if err != nil {
			t.Fatal(err)
		}
		gws[i] = g
	}
	var seq uint64
	views := 0
	for step := range 4000 {
		now := int64(step) * int64(37*time.Millisecond)
		switch step % 7 {
		case 0: // another gateway's admit lands at both stores
			seq++
			for _, key := range keys {
				key.Sync(now, store.Push{Gateway: 0, Admits: []int64{now}, Seq: seq})
			}
		case 3: // a sync
			for i, g := range gws {
				design.Sync(g, now, keys[i].SyncTo)
			}
		case 5: // the fallback, as while the store is down
			v0, v1 := gws[0].Fallback(now, 1), gws[1].Fallback(now, 1)
			if v0 != v1 {
				t.Fatalf("step %d: fallback %v without mend, %v with", step, v0, v1)
			}
		default:
			var vs [2]design.Verdict
			for i, g := range gws {
				v, q := g.Decide(now, 1)
				if v == design.Ask {
					v = g.Resume(now, 1, q, keys[i].Answer(now, 1, q))
				}
				vs[i] = v
			}
			if vs[0] != vs[1] {
				t.Fatalf("step %d: %v without mend, %v with", step, vs[0], vs[1])
			}
		}
		if step%3 == 0 {
			for _, fb := range []bool{false, true} {
				r0, u0 := gws[0].View(now, fb)
				r1, u1 := gws[1].View(now, fb)
				if r0 != r1 || u0 != u1 {
					t.Fatalf("step %d: view (fallback %v) %d, %d without mend, %d, %d with", step, fb, r0, u0, r1, u1)
				}
				if r0 > 0 && r0 < limit {
					views++
				}
			}
		}
	}
	if views == 0 {
		t.Fatal("no view between empty and full: the test compared nothing of interest")
	}
}
