package design_test

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// A query that carried admits and was abandoned while a sync was in
// flight: the sync's pull acknowledges what the sync pushed, not what the
// abandoned query carried, which the next sync pushes again. (The live
// limiter lost such admits on a paused Redis: the store held 7,194 of the
// 7,196 admits clients were told of.)
func TestAbandonedCarryIsPushedAgain(t *testing.T) {
	spec := window.Spec{Size: time.Minute}
	key := memstore.NewKey(100, spec)
	g, err := design.New("headroom", design.Config{Limit: 100, Window: spec, Gateways: 2, Gateway: 0, Sync: time.Second, Mend: true})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	told := 0
	decide := func(now int64) design.Verdict {
		v, q := g.Decide(now, 1)
		if v == design.Ask {
			v = g.Resume(now, 1, q, key.Answer(now, 0, q))
		}
		if v == design.Admit {
			told++
		}
		return v
	}
	// told by a first sync, then local admits on the budget
	decide(ms(1))
	design.Sync(g, ms(2), key.SyncTo)
	for i := int64(0); i < 3; i++ {
		if decide(ms(10+i)) != design.Admit {
			t.Fatal("no local admit: the budget is empty")
		}
	}
	// a sync goes out with those admits ...
	var push store.Push
	g.SyncPush(ms(20), &push)
	// ... and while it is in flight, more local admits, then a query that
	// carries them and is abandoned (its answer never comes)
	carried := 0
	for now := ms(21); ; now += ms(1) {
		v, q := g.Decide(now, 1)
		if v == design.Admit {
			told++
			carried++
			continue
		}
		if v != design.Ask || q.Carry == nil {
			t.Fatalf("verdict %v, carry %v: want a query carrying the admits since the sync", v, q.Carry)
		}
		if g.Abandon(now, 1, q, true) == design.Admit {
			told++
		}
		break
	}
	if carried == 0 {
		t.Fatal("no admit after the sync's push: the query carries nothing new")
	}
	// the sync comes back: the store applied its push only
	var pull store.Pull
	key.SyncTo(ms(30), &push, &pull)
	g.SyncPull(ms(30), &pull)
	design.Sync(g, ms(40), key.SyncTo)
	if held := key.Count(ms(40)); held != told {
		t.Fatalf("the store holds %d admits, the gateway told %d (%d carried by the abandoned query)", held, told, carried)
	}
}
