package design_test

import (
	"fmt"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
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
		design.Sync(g, 1000*ms, key.SyncTo)
	}
	d, _ := gws[1].Decide(1001*ms, 1)
	fmt.Printf("after the sync, gateway 1: %v (the store holds %d)\n", d, key.Count(1001*ms))
	// Output:
	// t=0ms gateway 0: admit
	// t=1ms gateway 0: admit
	// t=2ms gateway 1: admit
	// after the sync, gateway 1: reject (the store holds 3)
}

// headroom asks the store until it knows the key, then admits locally within
// its budget and asks again, carrying its local admits, once it is spent; an
// answer that shows the key less than half full renews the budget.
func ExampleNewHeadroom() {
	spec := window.Spec{Size: 10 * time.Second}
	c := design.Config{Limit: 10, Window: spec, Gateways: 2, Gateway: 0, Sync: time.Second}
	g := design.NewHeadroom(c, design.HeadroomTolerance)
	key := memstore.NewKey(c.Limit, spec)
	ms := int64(time.Millisecond)
	decide := func(t int64) {
		v, q := g.Decide(t*ms, 1)
		how := "locally"
		if v == design.Ask {
			carried := 0
			if q.Carry != nil {
				carried = len(q.Carry.Admits)
			}
			how = fmt.Sprintf("after a round trip carrying %d admits", carried)
			v = g.Resume(t*ms, 1, q, key.Answer(t*ms, 0, q))
		}
		fmt.Printf("t=%dms: %v %s\n", t, v, how)
	}
	decide(0)
	design.Sync(g, 1000*ms, key.SyncTo) // one arrival in 10 intervals: a budget of 1
	decide(1100)
	decide(1200)
	decide(1300)
	fmt.Println("the store holds", key.Count(1300*ms))
	// Output:
	// t=0ms: admit after a round trip carrying 0 admits
	// t=1100ms: admit locally
	// t=1200ms: admit after a round trip carrying 1 admits
	// t=1300ms: admit locally
	// the store holds 3
}

// permit holds whole admits ("slots") that the store lends, a tenth of L
// beyond the limit at most, while the key is calm; past them it asks the
// store's central check, and it refuses alone once the store said the
// window is full.
func ExampleNewPermit() {
	spec := window.Spec{Size: 10 * time.Second}
	c := design.Config{Limit: 20, Window: spec, Gateways: 2, Gateway: 0, Sync: time.Second}
	g := design.NewPermit(c, design.PermitTolerance) // spare ⌊0.1 L⌋ = 2, of which syncs lend 1
	key := memstore.NewKey(c.Limit, spec)
	ms := int64(time.Millisecond)
	decide := func(t int64) {
		v, q := g.Decide(t*ms, 1)
		how := "alone"
		if v == design.Ask {
			how = "after a round trip"
			v = g.Resume(t*ms, 1, q, key.Answer(t*ms, 0, q))
		}
		fmt.Printf("t=%dms: %v %s, holding %d\n", t, v, how, g.Held())
	}
	decide(0)           // no slot before a sync: the central check
	for i := range 19 { // the other gateway fills the window
		key.Answer(int64(100+i)*ms, 1, store.Query{Kind: store.QueryCentral, N: 1, Spare: 2})
	}
	design.Sync(g, 1000*ms, key.SyncTo) // 20 admitted: the store lends 1 slot beyond L
	fmt.Println("after the sync, holding", g.Held())
	decide(1100)                        // the slot
	decide(1200)                        // the pull said 20 of 20: refused without asking
	design.Sync(g, 2000*ms, key.SyncTo) // the slot's admit is pushed
	fmt.Println("the store holds", key.Count(2000*ms))
	// Output:
	// t=0ms: admit after a round trip, holding 0
	// after the sync, holding 1
	// t=1100ms: admit alone, holding 0
	// t=1200ms: reject alone, holding 0
	// the store holds 21
}

// A permit that keeps none of its spare for the central checks lends it
// all at a calm key's sync: with the window full, a gateway that asks
// for five slots is granted two beyond L where NewPermit's gets one.
func ExampleNewPermitReserve() {
	spec := window.Spec{Size: 10 * time.Second}
	c := design.Config{Limit: 20, Window: spec, Gateways: 2, Gateway: 0, Sync: time.Second}
	ms := int64(time.Millisecond)
	for _, reserve := range []int{design.PermitReserve(2), 0} {
		g := design.NewPermitReserve(c, design.PermitTolerance, reserve)
		key := memstore.NewKey(c.Limit, spec)
		_, q := g.Decide(0, 1) // no slot yet: the central check
		g.Resume(0, 1, q, key.Answer(0, 0, q))
		for i := range 19 { // the other gateway fills the window
			key.Answer(int64(100+i)*ms, 1, store.Query{Kind: store.QueryCentral, N: 1, Spare: 2})
		}
		design.Sync(g, 1000*ms, key.SyncTo) // it asks 5
		fmt.Printf("reserve %d: holding %d\n", reserve, g.Held())
	}
	// Output:
	// reserve 1: holding 1
	// reserve 0: holding 2
}
