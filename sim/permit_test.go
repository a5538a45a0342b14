package sim

import (
	"math"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

// permit's bound (docs/design.md): the store lends slots only while its
// window's admits and the slots outstanding stay within L + ⌊t·L⌋, and a
// central check admits only within both L and that, so no window ever holds
// more than L + ⌊t·L⌋ whatever the traffic. Held on floods meant to spend
// the lent slots: aimed at a few gateways of a fleet whose honest client
// has spread slots over them all (even routing, so the targets hold some),
// or at the likeliest of an uneven one; sudden at a sync instant or just
// after it with every gateway syncing at once (the slots just placed),
// pulsed, and at every rate; on fleets of 2 to 128 gateways, Δ from 0.1 s
// (up to K = 8) to 10 s, L of 100 and 1,000.
func TestPermitBound(t *testing.T) {
	t.Parallel() // pure runs: the suite's sim step has two cores
	traffics := []string{"steady:0.8,flood:1.5", "steady:0.8,flood:1000", "steady:0.8,flood:1000@3+5m", "steady:0.8,flood:1000@1+5m10ms",
		"steady:1,flood:30+5m", "steady:0.8,flood:1000+5m~1s/59s", "steady:0.8,flood:100@3+5m~200ms/9800ms",
		"pageload:0.8,flood:1000+5m1ms"}
	closest := math.Inf(1)
	runs := 0
	for _, limit := range []int{100, 1000} {
		spare := int(math.Floor(design.PermitTolerance * float64(limit)))
		for _, k := range []int{2, 8, 32, 128} {
			for _, sync := range []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second} {
				if limit == 1000 && sync != time.Second || sync < time.Second && k > 8 {
					continue // the dearest runs, which add no case of their own
				}
				for _, routing := range []Routing{Even, Uneven} {
					for _, tr := range traffics {
						p := Defaults()
						p.Design, p.Gateways, p.Sync, p.Limit, p.Routing = "permit", k, sync, limit, routing
						p.Duration, p.Seed, p.AlignedSync = 8*time.Minute, uint64(k), true
						p.Traffic, p.Also = mustMix(t, tr)
						if p.Also[0].Target > k || limit > 100 && p.Also[0].Factor > 100 {
							continue // a flood of 10⁶ a minute adds time, not a case
						}
						res, err := Run(p)
						if err != nil {
							t.Fatal(err)
						}
						runs++
						worst := int(math.Round(res.WorstWindowX * float64(limit)))
						if worst > limit+spare {
							t.Fatalf("L=%d K=%d Δ=%v %v %s: worst window %d, over L + ⌊t·L⌋ = %d", limit, k, sync, routing, tr, worst, limit+spare)
						}
						if worst > limit {
							closest = min(closest, float64(limit+spare-worst)/float64(spare))
						}
					}
				}
			}
		}
	}
	t.Logf("%d runs; closest approach: %.0f%% of the spare left", runs, 100*closest)
}
