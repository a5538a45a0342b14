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

// Doorman's own tests of FairShare (TestFairShare, TestFairShareLowerExtra):
// capacity 120; wants 1000, 60 and 10 get 55, 55 and 10; wants 1000, 50 and
// 10 get 60, 50 and 10.
func TestDoormanFairShare(t *testing.T) {
	for _, c := range []struct{ wants, gets []float64 }{
		{[]float64{1000, 60, 10}, []float64{55, 55, 10}},
		{[]float64{1000, 50, 10}, []float64{60, 50, 10}},
	} {
		r := &rateLeases{fair: true}
		for _, w := range c.wants { // the server knows every want first
			r.wants, r.has, r.known = append(r.wants, w), append(r.has, 0), append(r.known, true)
		}
		for gw, want := range c.gets {
			if got := r.rateLease(gw, 120, c.wants[gw]); got != want {
				t.Errorf("wants %v, client %d: gets %v, want %v", c.wants, gw, got, want)
			}
		}
	}
}
