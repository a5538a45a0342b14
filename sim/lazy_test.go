package sim

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/window"
)

// The lazy mode skips syncs it proves quiet; it must make exactly the
// decisions, and report exactly the figures, of the mode that performs every
// sync.
var sim0 StoreCounts

func TestLazyEqualsEager(t *testing.T) {
	type trace struct {
		t int64
		g int
		d design.Verdict
	}
	var performed [3]int64
	record := func(p Params, md mode) ([]trace, Result) {
		var tr []trace
		res, n, err := run(p, func(at int64, g int, d design.Verdict) { tr = append(tr, trace{at, g, d}) }, md)
		if err != nil {
			t.Fatal(err)
		}
		performed[md] += n
		return tr, res
	}
	traffics := []string{"steady:0.8", "steady:1", "pageload:0.8", "flood:3", "flood:100"}
	syncs := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 3 * time.Second, 10 * time.Second}
	if raceEnabled {
		traffics, syncs = []string{"steady:1", "pageload:0.8", "flood:3"}, []time.Duration{100 * time.Millisecond, 3 * time.Second}
	}
	runs, differ := 0, 0
	for _, name := range append(slices.Clone(design.StudyDesigns), design.OwnDesigns...) {
		if name == "central-log" {
			continue // never syncs
		}
		for _, tr := range traffics {
			for _, k := range []int{1, 3, 16} {
				for _, sync := range syncs {
					for _, routing := range []Routing{Even, Uneven} {
						p := Defaults()
						p.Design, p.Gateways, p.Sync, p.Routing = name, k, sync, routing
						p.Traffic, p.Duration, p.Seed = mustTraffic(t, tr), 15*time.Minute, uint64(k)
						p.Limit = 20 // a small limit keeps the window often full
						if k == 3 {
							p.WindowKind = window.Fixed
						}
						if sync == 3*time.Second {
							p.AlignedSync = true
						}
						want, wantRes := record(p, modeEager)
						got, gotRes := record(p, modeLazy)
						runs++
						if len(got) != len(want) {
							t.Fatalf("%v: lazy made %d decisions, eager %d", p, len(got), len(want))
						}
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("%v: decision %d lazy %+v, eager %+v", p, i, got[i], want[i])
							}
						}
						// The store's counts follow the syncs performed, which
						// the lazy mode leaves out when they change nothing
						// (a quiet sync still pulls the view): the rest is equal.
						if gotRes.Store.PushedStamps != wantRes.Store.PushedStamps {
							t.Fatalf("%v: lazy pushed %d stamps, eager %d", p, gotRes.Store.PushedStamps, wantRes.Store.PushedStamps)
						}
						gotRes.Store, wantRes.Store = sim0, sim0
						if !reflect.DeepEqual(gotRes, wantRes) {
							t.Fatalf("%v: results differ:\nlazy  %+v\neager %+v", p, gotRes, wantRes)
						}
						if wantRes.Rejected > 0 {
							differ++
						}
					}
				}
			}
		}
	}
	if differ < runs/2 {
		t.Fatalf("only %d of %d runs rejected anything: the comparison would prove little", differ, runs)
	}
	if performed[modeLazy] > performed[modeEager]/2 {
		t.Fatalf("lazy mode performed %d syncs, eager %d: it skipped too few to be tested", performed[modeLazy], performed[modeEager])
	}
	t.Logf("%d runs identical in both modes; lazy performed %d of eager's %d syncs", runs, performed[modeLazy], performed[modeEager])
}

// TestLazyEqualsEagerSharedBuckets holds the lazy mode to the eager one for
// leases whose window has more sync intervals than arrival buckets
// (design.MaxLeaseBuckets), so that a bucket holds several, with gateways
// idle for longer than the window: a skip of them must leave the ring where
// closing the intervals one by one does.
func TestLazyEqualsEagerSharedBuckets(t *testing.T) {
	for _, name := range []string{"lease", "lease-ask"} {
		for _, tr := range []string{"steady:0.1", "pageload:0.2"} {
			p := Defaults()
			p.Design, p.Gateways, p.Sync, p.Routing = name, 16, 10*time.Millisecond, Uneven
			p.Traffic, p.Duration, p.Seed = mustTraffic(t, tr), 10*time.Minute, 7
			eager, lazy := runMode(t, p, nil, modeEager), runMode(t, p, nil, modeLazy)
			eager.Store, lazy.Store = sim0, sim0
			if !reflect.DeepEqual(lazy, eager) {
				t.Fatalf("%v: results differ:\nlazy  %+v\neager %+v", p, lazy, eager)
			}
		}
	}
}
