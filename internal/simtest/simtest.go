// Package simtest runs the simulator for tests that hold a live fleet to
// it: the mean figures over seeds and how much they vary. It is for tests
// only, and must never decide anything a user sees.
package simtest

import (
	"math"
	"testing"

	"github.com/fleetlimit/fleetlimit/sim"
)

// Seeds runs p with seeds 1 to n (n >= 2) and returns the mean figures
// and the standard deviation over the seeds of round_trip_pct and
// rejected_pct, in that order.
func Seeds(t testing.TB, p sim.Params, n int) (mean sim.Figures, sd [2]float64) {
	t.Helper()
	var sum, sq [2]float64
	for s := 1; s <= n; s++ {
		p.Seed = uint64(s)
		r, err := sim.Run(p)
		if err != nil {
			t.Fatal(err)
		}
		mean.Add(r.Figures)
		for i, v := range []float64{r.RoundTripPct, r.RejectedPct} {
			sum[i] += v
			sq[i] += v * v
		}
	}
	mean.Div(float64(n))
	for i := range sd {
		m := sum[i] / float64(n)
		sd[i] = math.Sqrt(max(sq[i]/float64(n)-m*m, 0) * float64(n) / float64(n-1))
	}
	return mean, sd
}
