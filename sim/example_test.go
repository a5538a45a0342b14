package sim_test

import (
	"fmt"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
)

// Runs that differ only in design (or Δ, the window's kind, the lease
// policy) see the same requests: draw them once and replay them in each.
func ExampleRunRequests() {
	p := sim.Defaults()
	p.Gateways = 8
	p.Traffic = sim.Traffic{Kind: sim.Flood, Factor: 100}
	p.Duration = 20 * time.Minute
	rq, err := sim.DrawRequests(p)
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"shared-counter", "lease"} {
		p.Design = name
		r, err := sim.RunRequests(p, rq)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d requests, worst window %.2f x L\n", name, r.Requests, r.WorstWindowX)
	}
	// Output:
	// shared-counter: 199366 requests, worst window 2.73 x L
	// lease: 199366 requests, worst window 1.00 x L
}
