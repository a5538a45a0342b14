package design

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// leaseAt is a lease gateway (L = 100 a minute, K = 4) and a function that
// runs one sync at sec whose pull is pull.
func leaseAt(t *testing.T) (*lease, func(sec float64, pull store.Pull)) {
	t.Helper()
	g := newLease(Config{Limit: 100, Window: window.Spec{Size: time.Minute}, Gateways: 4, Sync: time.Second}, false).(*lease)
	return g, func(sec float64, pull store.Pull) {
		var p store.Push
		now := int64(sec * float64(time.Second))
		g.SyncPush(now, &p)
		g.SyncPull(now, &pull)
	}
}

// Fallback admits made while a sync was in flight take the first slots of
// its grant, which the store made on a count without them (the nemesis
// found a lease gateway that spent a 3 s old grant whole after 12
// fallback admits: seed 15179).
func TestLeaseFallbackAdmitsTakeTheLateGrant(t *testing.T) {
	g, _ := leaseAt(t)
	var p store.Push
	g.SyncPush(int64(time.Second), &p)
	for i := range 3 { // the store went away: the fallback decides
		if v := g.Fallback(int64(time.Second)+int64(i+1)*int64(time.Millisecond), 1); v != Admit {
			t.Fatalf("fallback admit %d: %v", i, v)
		}
	}
	g.SyncPull(int64(2*time.Second), &store.Pull{Count: 0, Granted: 5, Outstanding: 5, Gen: 1})
	if held := g.Held(); held != 2 {
		t.Fatalf("after 3 fallback admits and a grant of 5 read before them, %d slots held, want 2", held)
	}
}

// After the store lost the key, a lease uses no more slots than the count
// it knew leaves, slots outstanding fleet-wide included: any of them may
// still be spent (the nemesis found a fleet at 139 of 127 that left them
// out: seed 13393).
func TestLeaseLostKeyCountsOutstandingSlots(t *testing.T) {
	g, sync := leaseAt(t)
	sync(1, store.Pull{Count: 20, Granted: 10, Outstanding: 70, Gen: 1})
	sync(2, store.Pull{Count: 5, Granted: 60, Outstanding: 60, Gen: 2}) // a new life a second later: lost
	if g.Forgotten() != 1 {
		t.Fatalf("the loss was not found: %d", g.Forgotten())
	}
	if held := g.Held(); held > 100-20-70 {
		t.Fatalf("%d slots held after the loss; the count known leaves %d", held, 100-20-70)
	}
}
