package catalog

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// gubernator's docs/architecture.md, "Side effects of global behavior":
// "the immediate response to the client will not include the most accurate
// remaining counts, as that count will only get updated after the async call
// to the owner peer is complete and the owning peer has had time to update
// all the peers". With a limit of 5, the owner and another peer each admit
// 5 before the peer's hits reach the owner; after the update the peer
// refuses, and so does the owner.
func TestGubernatorGlobalAsItsDocsSay(t *testing.T) {
	spec := window.Spec{Size: time.Minute, Kind: window.Fixed}
	key := memstore.NewKey(5, spec)
	info, _ := Lookup("gubernator-global")
	mk := func(g int) design.Gateway {
		return info.New(design.Config{Limit: 5, Window: spec, Gateways: 2, Gateway: g, Sync: time.Second})
	}
	owner, peer := mk(0), mk(1)
	sync := func(g design.Gateway, at int64) {
		design.Sync(g, at, func(now int64, p *store.Push, pull *store.Pull) { key.SyncTo(now, p, pull) })
	}
	ms := int64(time.Millisecond)
	sync(peer, 1*ms) // the owner's first word: nothing counted
	decide := func(g design.Gateway, at int64) design.Verdict {
		v, q := g.Decide(at, 1)
		if v == design.Ask {
			v = g.Resume(at, 1, q, key.Answer(at, 0, q))
		}
		return v
	}
	admitted := 0
	for i := range 6 {
		if decide(owner, int64(10+i)*ms) == design.Admit {
			admitted++
		}
		if decide(peer, int64(10+i)*ms) == design.Admit {
			admitted++
		}
	}
	if admitted != 10 {
		t.Fatalf("before the peer's hits reach the owner: %d admitted, want 5 at each", admitted)
	}
	sync(peer, 1000*ms) // the hits go to the owner, and its count comes back
	if decide(peer, 1001*ms) != design.Reject || decide(owner, 1001*ms) != design.Reject {
		t.Fatal("after the update, a request was admitted over the limit")
	}
}
