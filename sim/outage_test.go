package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// While the store is down, a fleet adds to what it would admit without the
// outage at most the rounding, K − 1, what its gateways had not heard of
// when the store went away, Ū (the mean over the gateways of the admits of
// the window made after their last contact with the store), and, when it
// comes back, what the store admits before every gateway has pushed its
// fallback's admits: the admits of the first two sync intervals after it
// (each gateway pushes at its first sync, and falls back until its second;
// docs/design.md, "The live limiter"). For every design, at K = 2, 8 and
// 32, Δ = 100 ms and 1 s, honest traffic and floods, outages of 10 s and of
// two windows: the worst window with the outage is at most max(L, the
// worst without) + K + Ū + those.
func TestOutageBound(t *testing.T) {
	t.Parallel() // pure runs: the suite's sim step has two cores
	ks, deltas := []int{2, 8, 32}, []time.Duration{100 * time.Millisecond, time.Second}
	traffics := []string{"steady:0.8", "flood:3", "flood:100"}
	if raceEnabled {
		ks, traffics = ks[1:2], traffics[1:2]
	}
	checked := 0
	// the registered designs, but those other tests register
	for _, name := range slices.Concat(catalog.StudyDesigns, catalog.OwnDesigns) {
		for _, k := range ks {
			for _, delta := range deltas {
				for _, tr := range traffics {
					for _, length := range []time.Duration{10 * time.Second, 2 * time.Minute} {
						p := Defaults()
						p.Design, p.Gateways, p.Sync, p.Duration, p.Seed = name, k, delta, 8*time.Minute, uint64(k)
						p.Traffic, p.Also = mustMix(t, tr)
						p.Faults.Outages = []Outage{{At: 3 * time.Minute, For: length}}
						checkOutage(t, p)
						checked++
					}
				}
			}
		}
	}
	t.Logf("%d runs held to the bound", checked)
}

// checkOutage holds run p, with its one outage, to the bound against the
// same run without it.
func checkOutage(t *testing.T, p Params) {
	t.Helper()
	down := p.Faults.Outages[0]
	calm := p
	calm.Faults.Outages = nil
	calm.Faults.RTT = time.Nanosecond // the fault engine, as the run with the outage
	_, base := traced(t, calm, modeAuto)
	dec, res := traced(t, p, modeAuto)
	var admits []int64
	for _, d := range dec {
		if d.v == design.Admit {
			admits = append(admits, d.t)
		}
	}
	slices.Sort(admits)
	u := unheard(p, dec, admits, int64(down.At))
	end := int64(down.At + down.For)
	lo, _ := slices.BinarySearch(admits, end)
	hi, _ := slices.BinarySearch(admits, end+2*int64(p.Sync)+1)
	back := float64(hi - lo)
	limit := float64(p.Limit)
	bound := max(limit, base.WorstWindowX*limit) + float64(p.Gateways) + u + back
	if got := res.WorstWindowX * limit; got > bound {
		t.Fatalf("%v: worst window %.0f with the outage, %.0f without: over max(L, %.0f) + K + Ū + %.0f = %.1f (Ū %.1f)",
			p, got, base.WorstWindowX*limit, base.WorstWindowX*limit, back, bound, u)
	}
	if res.Fallbacks == 0 {
		t.Fatalf("%v: no request fell back during the outage", p)
	}
}

// unheard is Ū for an outage starting at t0: for each gateway, the admits
// after its last contact with the store, less the longest an admit takes to
// reach the store (Δ: the admitting gateway's next push; none for a design
// whose store admits), averaged over the gateways. A contact is a sync (at
// its phase + nΔ), or, for a design the store decides for, a decision.
func unheard(p Params, dec []decision, admits []int64, t0 int64) float64 {
	phase, _ := syncPhases(p, p.Gateways)
	info, _ := catalog.Lookup(p.Design)
	since := make([]int64, p.Gateways)
	for g := range since {
		since[g] = math.MinInt64
		if ph := phase[g]; !info.NoSync && ph < t0 {
			last := ph + (t0-1-ph)/int64(p.Sync)*int64(p.Sync)
			since[g] = last - int64(p.Sync)
		}
	}
	if info.NoSync {
		for _, d := range dec {
			if d.t < t0 {
				since[d.g] = d.t
			}
		}
	}
	total := 0
	for _, s := range since {
		lo, _ := slices.BinarySearch(admits, s+1)
		hi, _ := slices.BinarySearch(admits, t0)
		total += hi - lo
	}
	return float64(total) / float64(p.Gateways)
}

// A store that forgets everything mid-run (Faults.Forgets) costs a fleet at
// most the admits of the sync interval in which its gateways find the loss
// and re-seed the store, and the rounding: for every design whose windows
// hold L, at K = 2, 8 and 32, Δ = 100 ms and 1 s, honest traffic and
// floods, the worst window is at most max(L, the worst without the loss) +
// K + the admits of one sync interval after it (where it used to be up to
// 2 L). The counter designs overshoot a flood by their nature, and their
// runs part after the loss, so that one run's worst window bounds no other:
// design.TestForgottenKeyIsReseeded holds them to the same, a run at a time.
func TestForgetBound(t *testing.T) {
	ks, deltas := []int{2, 8, 32}, []time.Duration{100 * time.Millisecond, time.Second}
	traffics := []string{"steady:0.8", "flood:3", "flood:100"}
	if raceEnabled {
		ks, traffics = ks[1:2], traffics[1:2]
	}
	for _, name := range []string{"central-log", "split", "lease", "lease-ask", "headroom"} {
		for _, k := range ks {
			for _, delta := range deltas {
				for _, tr := range traffics {
					p := Defaults()
					p.Design, p.Gateways, p.Sync, p.Duration, p.Seed = name, k, delta, 6*time.Minute, uint64(k)
					p.Traffic, p.Also = mustMix(t, tr)
					at := int64(3*time.Minute + 500*time.Millisecond)
					p.Faults.Forgets = []time.Duration{time.Duration(at)}
					kept := p
					kept.Faults.Forgets = nil
					kept.Faults.RTT = time.Nanosecond // the fault engine, as the run that forgets
					_, base := traced(t, kept, modeAuto)
					dec, res := traced(t, p, modeAuto)
					var admits []int64
					for _, d := range dec {
						if d.v == design.Admit {
							admits = append(admits, d.t)
						}
					}
					lo, _ := slices.BinarySearch(admits, at)
					hi, _ := slices.BinarySearch(admits, at+int64(delta)+1)
					limit := float64(p.Limit)
					bound := max(limit, base.WorstWindowX*limit) + float64(k) + float64(hi-lo)
					if got := res.WorstWindowX * limit; got > bound {
						t.Fatalf("%v: worst window %.0f with the loss, %.0f without: over %.0f", p, got, base.WorstWindowX*limit, bound)
					}
				}
			}
		}
	}
}
