package study_test

import (
	"fmt"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/study"
)

// The fewest round trips any design can make for an honest client at 80%
// of L = 100 on K gateways, if no window may pass 1.10 × L whatever a
// flood does: at K = 32 with even routing, no design goes under 13.6%.
func ExampleRoundTripBound() {
	for _, k := range []int{16, 32, 128} {
		fmt.Printf("K = %d: even %.1f%%, uneven %.1f%%\n", k,
			100*study.RoundTripBound(k, sim.Even, 100, 0.8, 0.1), 100*study.RoundTripBound(k, sim.Uneven, 100, 0.8, 0.1))
	}
	// Output:
	// K = 16: even 0.8%, uneven 0.3%
	// K = 32: even 13.6%, uneven 4.1%
	// K = 128: even 76.3%, uneven 27.1%
}
