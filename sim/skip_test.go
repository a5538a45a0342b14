package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// TestSkipEqualsEager holds the eager mode that leaves out quiet syncs on
// arrivals drawn ahead (skipper) to the one that performs every sync: the
// same decisions at the same times and the same figures, but for the
// store's counts, which follow the syncs performed.
func TestSkipEqualsEager(t *testing.T) {
	var performed [2]int64
	record := func(p Params, rq *Requests, i int, md mode) ([]decision, Result) {
		tr, res, n := recordRun(t, p, rq, md)
		performed[i] += n
		return tr, res
	}
	traffics := []string{"steady:0.8", "steady:1", "pageload:0.8", "flood:3"}
	syncs := []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second}
	if raceEnabled {
		traffics, syncs = []string{"steady:1", "pageload:0.8"}, []time.Duration{time.Second}
	}
	runs, differ := 0, 0
	for _, name := range append(slices.Clone(catalog.StudyDesigns), catalog.OwnDesigns...) {
		for _, tr := range traffics {
			for _, k := range []int{1, 3, 16} {
				for _, sync := range syncs {
					p := Defaults()
					p.Design, p.Gateways, p.Sync, p.Routing = name, k, sync, Uneven
					p.Traffic, p.Duration, p.Seed = mustTraffic(t, tr), 15*time.Minute, uint64(k)
					p.Limit = 20 // a small limit keeps the window often full
					if k == 3 {
						p.WindowKind, p.Routing = window.Fixed, Even
					}
					rq, err := DrawRequests(p)
					if err != nil {
						t.Fatal(err)
					}
					want, wantRes := record(p, rq, 0, modeEager)
					got, gotRes := record(p, rq, 1, modeSkip)
					runs++
					mustMatchEvery(t, p, "leaving quiet syncs out", got, want, gotRes, wantRes)
					if wantRes.Rejected > 0 {
						differ++
					}
				}
			}
		}
	}
	mustHaveTested(t, "leaving quiet syncs out", runs, differ, performed[1], performed[0])
}
