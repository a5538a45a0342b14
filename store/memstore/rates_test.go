package memstore

import "testing"

// Doorman's own test of ProportionalShare (go/server/doorman/
// algorithm_test.go, TestProportionalShare): capacity 120, clients wanting
// 60, 60 and 10, known to the server before they ask, get 55, 55 and 10.
func TestDoormanProportionalShare(t *testing.T) {
	r := &rateLeases{}
	for gw, w := range []float64{60, 60, 10} { // the server knows every want first
		for gw >= len(r.wants) {
			r.wants, r.has, r.known = append(r.wants, 0), append(r.has, 0), append(r.known, false)
		}
		r.wants[gw], r.known[gw] = w, true
	}
	for gw, want := range []float64{55, 55, 10} {
		if got := r.rateLease(gw, 120, r.wants[gw]); got != want {
			t.Errorf("client %d: gets %v, want %v", gw, got, want)
		}
	}
	// its second case: a server that learns the wants as they come
	r = &rateLeases{}
	for gw, c := range []struct{ wants, gets float64 }{{60, 60}, {75, 60}, {10, 0}} {
		if got := r.rateLease(gw, 120, c.wants); got != c.gets {
			t.Errorf("client %d, learnt as it asks: gets %v, want %v", gw, got, c.gets)
		}
	}
}
