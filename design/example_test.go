package design_test

import (
	"fmt"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// Two shared-counter gateways, driven by hand: each decides alone between
// syncs, so together they admit past the limit until a sync tells them.
func Example() {
	spec := window.Spec{Size: time.Minute}
	key := memstore.NewKey(2, spec)
	var gws []design.Gateway
	for i := 0; i < 2; i++ {
		g, _ := design.New("shared-counter", design.Config{Limit: 2, Window: spec, Gateways: 2, Gateway: i, Sync: time.Second})
		gws = append(gws, g)
	}
	ms := int64(time.Millisecond)
	for _, at := range []struct {
		ms int64
		gw int
	}{{0, 0}, {1, 0}, {2, 1}} {
		d, _ := gws[at.gw].Decide(at.ms*ms, 1)
		fmt.Printf("t=%dms gateway %d: %v\n", at.ms, at.gw, d)
	}
	for _, g := range gws { // both sync at 1s
		g.SyncPull(1000*ms, key.Sync(1000*ms, g.SyncPush(1000*ms)))
	}
	d, _ := gws[1].Decide(1001*ms, 1)
	fmt.Printf("after the sync, gateway 1: %v (the store holds %d)\n", d, key.Count(1001*ms))
	// Output:
	// t=0ms gateway 0: admit
	// t=1ms gateway 0: admit
	// t=2ms gateway 1: admit
	// after the sync, gateway 1: reject (the store holds 3)
}
