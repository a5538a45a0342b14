package sim

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// The lazy mode skips syncs it proves quiet; it must make exactly the
// decisions, and report exactly the figures, of the mode that performs every
// sync.
var sim0 StoreCounts

// recordRun runs p in mode md on the arrivals rq (nil: drawn as it goes)
// and returns its decisions, its result and the syncs it performed.
func recordRun(t *testing.T, p Params, rq *Requests, md mode) ([]decision, Result, int64) {
	t.Helper()
	var tr []decision
	res, n, err := runOn(p, rq, func(at int64, g int, d design.Verdict) { tr = append(tr, decision{at, g, d}) }, md)
	if err != nil {
		t.Fatal(err)
	}
	return tr, res, n
}

// mustMatchEvery fails t unless got and gotRes, the decisions and result of
// run p in a mode that leaves syncs out (named how), are those of the same
// run performing every sync. The store's counts follow the syncs
// performed, and a quiet sync still pulls: of them only the stamps pushed
// must be equal.
func mustMatchEvery(t *testing.T, p Params, how string, got, want []decision, gotRes, wantRes Result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%v: %s made %d decisions, every sync %d", p, how, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%v: decision %d %s %+v, every sync %+v", p, i, how, got[i], want[i])
		}
	}
	if gotRes.Store.PushedStamps != wantRes.Store.PushedStamps {
		t.Fatalf("%v: %s pushed %d stamps, every sync %d", p, how, gotRes.Store.PushedStamps, wantRes.Store.PushedStamps)
	}
	gotRes.Store, wantRes.Store = sim0, sim0
	if !reflect.DeepEqual(gotRes, wantRes) {
		t.Fatalf("%v: results differ:\n%s %+v\nevery sync %+v", p, how, gotRes, wantRes)
	}
}

// mustHaveTested fails t unless a comparison of modes proved something: at
// least half its runs rejected a request, and the mode named how performed
// at most half the syncs of the one that performs every sync.
func mustHaveTested(t *testing.T, how string, runs, rejecting int, performed, every int64) {
	t.Helper()
	if rejecting < runs/2 {
		t.Fatalf("only %d of %d runs rejected anything: the comparison would prove little", rejecting, runs)
	}
	if performed > every/2 {
		t.Fatalf("%s performed %d syncs, every sync %d: too few left out to be tested", how, performed, every)
	}
	t.Logf("%d runs identical; %s performed %d of the %d syncs", runs, how, performed, every)
}

func TestLazyEqualsEager(t *testing.T) {
	t.Parallel() // pure runs: the suite's sim step has two cores
	var performed [3]int64
	record := func(p Params, md mode) ([]decision, Result) {
		tr, res, n := recordRun(t, p, nil, md)
		performed[md] += n
		return tr, res
	}
	traffics := []string{"steady:0.8", "steady:1", "pageload:0.8", "flood:3", "flood:100"}
	syncs := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 3 * time.Second, 10 * time.Second}
	if raceEnabled {
		traffics, syncs = []string{"steady:1", "pageload:0.8", "flood:3"}, []time.Duration{100 * time.Millisecond, 3 * time.Second}
	}
	runs, differ := 0, 0
	for _, name := range append(slices.Clone(catalog.StudyDesigns), catalog.OwnDesigns...) {
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
						mustMatchEvery(t, p, "lazy", got, want, gotRes, wantRes)
						if wantRes.Rejected > 0 {
							differ++
						}
					}
				}
			}
		}
	}
	mustHaveTested(t, "the lazy mode", runs, differ, performed[modeLazy], performed[modeEager])
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

// TestLazyEqualsEagerRateLeases holds the lazy mode to the eager one for
// Doorman's rate leases, whose syncs it leaves out while a gateway asks
// what it asked and no gateway's want or rate has changed (heldRates):
// light traffic, where most syncs are quiet, bursts, and floods, whose
// asks change at every sync.
func TestLazyEqualsEagerRateLeases(t *testing.T) {
	t.Parallel()
	var performed [3]int64
	runs, differ := 0, 0
	traffics := []string{"steady:0.05", "pageload:0.3", "steady:0.8", "flood:3"}
	if raceEnabled {
		traffics = traffics[1:3]
	}
	for _, name := range []string{"doorman", "doorman-fair"} {
		for _, tr := range traffics {
			for _, k := range []int{1, 3, 16} {
				for _, sync := range []time.Duration{100 * time.Millisecond, time.Second, 3 * time.Second} {
					for _, routing := range []Routing{Even, Uneven} {
						p := Defaults()
						p.Design, p.Gateways, p.Sync, p.Routing = name, k, sync, routing
						p.Traffic, p.Duration, p.Seed = mustTraffic(t, tr), 10*time.Minute, uint64(k)
						p.Limit = 20
						if k == 3 {
							p.WindowKind = window.Fixed
						}
						if sync == 3*time.Second {
							p.AlignedSync = true
						}
						want, wantRes, ne := recordRun(t, p, nil, modeEager)
						got, gotRes, nl := recordRun(t, p, nil, modeLazy)
						performed[modeEager] += ne
						performed[modeLazy] += nl
						runs++
						mustMatchEvery(t, p, "lazy", got, want, gotRes, wantRes)
						if wantRes.Rejected > 0 {
							differ++
						}
					}
				}
			}
		}
	}
	mustHaveTested(t, "the lazy mode", runs, differ, performed[modeLazy], performed[modeEager])
}

// TestFreshQuietHolds holds catalog.Info.FreshQuiet to the designs: a
// gateway fresh from New, at every index of fleets of 1 to 128, with
// limits of 1 to 10,000, sliding and fixed windows, has no sync that
// changes anything. A replay's lazy run builds only the gateways its
// requests reach on that word.
func TestFreshQuietHolds(t *testing.T) {
	declared := 0
	for _, name := range catalog.Names() {
		info, _ := catalog.Lookup(name)
		if !info.FreshQuiet {
			continue
		}
		declared++
		for _, k := range []int{1, 2, 3, 8, 16, 128} {
			for _, l := range []int{1, 5, 100, 10000} {
				for _, kind := range []window.Kind{window.Sliding, window.Fixed} {
					for g := range k {
						c := design.Config{Limit: l, Window: window.Spec{Kind: kind, Size: time.Minute}, Gateways: k, Gateway: g, Sync: time.Second}
						lz, ok := info.New(c).(lazy)
						if !ok || lz.QuietSyncs() != math.MaxInt {
							t.Fatalf("%s, K = %d, gateway %d, L = %d, %v: declared FreshQuiet, but a fresh gateway's syncs are not all quiet", name, k, g, l, kind)
						}
					}
				}
			}
		}
	}
	if declared == 0 {
		t.Fatal("no design declares FreshQuiet: the test tests nothing")
	}
}
