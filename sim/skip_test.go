package sim

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/window"
)

// TestSkipEqualsEager holds the eager mode that leaves out quiet syncs on
// arrivals drawn ahead (skipper) to the one that performs every sync: the
// same decisions at the same times and the same figures, but for the
// store's counts, which follow the syncs performed.
func TestSkipEqualsEager(t *testing.T) {
	type decision struct {
		t int64
		g int
		d design.Verdict
	}
	var performed [2]int64
	record := func(p Params, rq *Requests, i int, md mode) ([]decision, Result) {
		var tr []decision
		res, n, err := runOn(p, rq, func(at int64, g int, d design.Verdict) { tr = append(tr, decision{at, g, d}) }, md)
		if err != nil {
			t.Fatal(err)
		}
		performed[i] += n
		return tr, res
	}
	traffics := []string{"steady:0.8", "steady:1", "pageload:0.8", "flood:3"}
	syncs := []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second}
	if raceEnabled {
		traffics, syncs = []string{"steady:1", "pageload:0.8"}, []time.Duration{time.Second}
	}
	runs, differ := 0, 0
	for _, name := range append(slices.Clone(design.StudyDesigns), design.OwnDesigns...) {
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
					if !slices.Equal(got, want) {
						t.Fatalf("%v: the decisions differ (%d leaving quiet syncs out, %d with every sync)", p, len(got), len(want))
					}
					if gotRes.Store.PushedStamps != wantRes.Store.PushedStamps {
						t.Fatalf("%v: pushed %d stamps leaving quiet syncs out, %d with every sync", p, gotRes.Store.PushedStamps, wantRes.Store.PushedStamps)
					}
					gotRes.Store, wantRes.Store = sim0, sim0
					if !reflect.DeepEqual(gotRes, wantRes) {
						t.Fatalf("%v: results differ:\nleaving out %+v\nevery sync  %+v", p, gotRes, wantRes)
					}
					if wantRes.Rejected > 0 {
						differ++
					}
				}
			}
		}
	}
	if differ < runs/2 {
		t.Fatalf("only %d of %d runs rejected anything: the comparison would prove little", differ, runs)
	}
	if performed[1] > performed[0]/2 {
		t.Fatalf("performed %d syncs leaving quiet ones out, %d with every sync: too few left out to be tested", performed[1], performed[0])
	}
	t.Logf("%d runs identical; %d of %d syncs performed", runs, performed[1], performed[0])
}
