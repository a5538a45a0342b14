package design_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// A live driver sends a central check and a sync of the same key on
// different connections: the store may apply either first, and either
// answer may come back first. Whatever the order, a lone gateway's
// remaining must be the limit less what it admitted, as a store that
// counts every request (envoyproxy/ratelimit) would say. The four orders
// are: store applies the check first or the sync first, and the gateway
// hears the check first or the pull first.
func TestRemainingWhenACheckOverlapsASync(t *testing.T) {
	const limit = 20
	spec := window.Spec{Size: time.Minute}
	sec := int64(time.Second)
	for _, name := range []string{"central-log", "headroom", "permit", "lease-ask"} {
		for _, order := range []struct {
			checkFirst, hearCheckFirst bool
		}{{true, true}, {true, false}, {false, true}, {false, false}} {
			t.Run(fmt.Sprintf("%s/store-check-first=%v/hear-check-first=%v", name, order.checkFirst, order.hearCheckFirst), func(t *testing.T) {
				key := memstore.NewKey(limit, spec)
				g, err := design.New(name, design.Config{Limit: limit, Window: spec, Gateways: 2, Sync: time.Second, Mend: true, Epoch: 1})
				if err != nil {
					t.Fatal(err)
				}
				admitted := 0
				decide := func(now int64) {
					v, q := g.Decide(now, 1)
					if v == design.Ask {
						v = g.Resume(now, 1, q, key.Answer(now, 0, q))
					}
					if v == design.Admit {
						admitted++
					}
				}
				for i := range 5 {
					decide(int64(i) * sec / 10)
				}
				design.Sync(g, sec, key.SyncTo)
				for range 2 { // alone, if it may: the push below carries them
					decide(3 * sec / 2)
				}
				now := 2 * sec
				var push store.Push
				var pull store.Pull
				g.SyncPush(now, &push)
				// spend what the gateway may admit alone (slots, budget)
				v, q := g.Decide(now, 1)
				for i := 0; v == design.Admit && i < limit; i++ {
					admitted++
					v, q = g.Decide(now, 1)
				}
				if v != design.Ask {
					t.Fatalf("a request while the sync is in flight, with nothing to admit alone on: %v, want a central check", v)
				}
				var a store.Answer
				if order.checkFirst {
					a = key.Answer(now, 0, q)
					key.SyncTo(now, &push, &pull)
				} else {
					key.SyncTo(now, &push, &pull)
					a = key.Answer(now, 0, q)
				}
				if !a.Admit {
					t.Fatalf("the store refused a check with room: %+v", a)
				}
				if order.hearCheckFirst {
					v = g.Resume(now, 1, q, a)
					g.SyncPull(now, &pull)
				} else {
					g.SyncPull(now, &pull)
					v = g.Resume(now, 1, q, a)
				}
				if v == design.Admit {
					admitted++
				}
				if c := key.Count(now); c != admitted {
					t.Fatalf("the store counts %d, the gateway admitted %d", c, admitted)
				}
				want := max(limit-admitted, g.Held())
				if got, _ := g.View(now, false); got != want {
					t.Errorf("remaining %d after %d admits, want %d", got, admitted, want)
				}
			})
		}
	}
}
