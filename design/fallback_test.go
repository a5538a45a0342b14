package design_test

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// Every design's Fallback is the local quota: ceil(L/K) of this gateway's
// own admits in the window, counting the admits it made before the store
// went away (by its rule or by the store) and the fallback's own, which
// reach the store at the next sync and are pushed once.
func TestFallbackIsTheLocalQuota(t *testing.T) {
	const sec = int64(time.Second)
	for _, name := range design.StudyDesigns {
		t.Run(name, func(t *testing.T) {
			spec := window.Spec{Size: 10 * time.Second}
			key := memstore.NewKey(40, spec)
			g, err := design.New(name, design.Config{Limit: 40, Window: spec, Gateways: 4, Gateway: 1, Sync: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			sync := func(at int64) { design.Sync(g, at, key.SyncTo) }
			before := 0 // admits by the design's own rule
			decide := func(at int64) {
				v, q := g.Decide(at, 1)
				if v == design.Ask {
					v = g.Resume(at, 1, q, key.Answer(at, 1, q))
				}
				if v == design.Admit {
					before++
				}
			}
			if name == "lease" || name == "lease-ask" { // let the lease see arrivals and get slots
				for i := 0; i < 8; i++ {
					decide(0)
				}
				sync(sec / 2)
			}
			// Three requests by the design's own rule, at 1 s, synced at 2 s.
			for i := 0; i < 3; i++ {
				decide(sec)
			}
			sync(2 * sec)
			inStore := key.Count(2 * sec)
			// The store is gone: the quota ceil(40/4) = 10 less what is used.
			fell := 0
			for i := 0; i < 20; i++ {
				if g.Fallback(3*sec, 1) == design.Admit {
					fell++
				}
			}
			if before == 0 || fell != max(10-before, 0) {
				t.Fatalf("admitted %d by the rule and %d by the fallback: want the fallback to fill the quota of 10", before, fell)
			}
			if left, _ := g.View(3*sec, true); left != 0 {
				t.Fatalf("fallback view says %d left, want 0", left)
			}
			// Once the first admits have left the window, the quota frees them.
			if g.Fallback(11*sec+1, 1) != design.Admit {
				t.Fatal("the quota did not free the admits that left the window")
			}
			sync(12 * sec)
			sync(12*sec + 1)
			if got, want := key.Count(12*sec+1), fell+1; got != want {
				t.Fatalf("store holds %d admits in the window at 12s, want the fallback's %d (pushed once; %d were there before)", got, want, inStore)
			}
		})
	}
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
