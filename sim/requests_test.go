package sim

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// TestRequestsMatchRun holds runs on arrivals drawn ahead to runs that draw
// their own: every design, in the lazy and the eager mode, with floods
// counted in bulk, mixes, targets, pulses and faults, the requests of each
// key drawn once and shared by every design and sync interval.
func TestRequestsMatchRun(t *testing.T) {
	t.Parallel() // pure runs: the suite's sim step has two cores
	traffics := []string{"steady:0.5", "pageload:0.8", "flood:30", "steady:0.5,flood:100@1+5m", "flood:100~10s/50s"}
	syncs := []time.Duration{100 * time.Millisecond, 3 * time.Second}
	if raceEnabled {
		traffics, syncs = traffics[2:4], syncs[1:]
	}
	faults := []Faults{{}, {RTT: 5 * time.Millisecond, Loss: 0.1, Restarts: []Restart{{At: 6 * time.Minute, Gateway: AllGateways}}}}
	runs := 0
	for _, tr := range traffics {
		for i, k := range []int{1, 3, 8} {
			base := Defaults()
			base.Gateways, base.Limit, base.Duration, base.Seed, base.Routing = k, 50, 12*time.Minute, uint64(7+k), Routing(i%2)
			base.Traffic, base.Also = mustMix(t, tr)
			rq, err := DrawRequests(base)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range catalog.Names() {
				for j, sync := range syncs {
					p := base
					p.Design, p.Sync, p.Faults = name, sync, faults[(i+j)%len(faults)]
					if info, _ := catalog.Lookup(name); info.FixedWindow {
						p.WindowKind = window.Fixed
					}
					want, err := Run(p)
					if err != nil {
						t.Fatal(err)
					}
					got, err := RunRequests(p, rq)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%v:\non its own %+v\nshared     %+v", p, want, got)
					}
					runs++
				}
			}
		}
	}
	t.Logf("%d runs identical", runs)
}

func TestRunRequestsRefusesOthers(t *testing.T) {
	p := Defaults()
	p.Duration = 10 * time.Minute
	rq, err := DrawRequests(p)
	if err != nil {
		t.Fatal(err)
	}
	if rq.Len() < 500 {
		t.Fatalf("%d requests drawn for steady:0.8 over 10 minutes at 100 a minute", rq.Len())
	}
	q := p
	q.Design, q.Sync, q.WindowKind = "lease", 3*time.Second, window.Fixed
	if _, err := RunRequests(q, rq); err != nil {
		t.Fatalf("another design and sync: %v", err)
	}
	for name, change := range map[string]func(*Params){
		"seed":     func(p *Params) { p.Seed++ },
		"gateways": func(p *Params) { p.Gateways++ },
		"routing":  func(p *Params) { p.Routing = Uneven },
		"duration": func(p *Params) { p.Duration += time.Minute },
		"traffic":  func(p *Params) { p.Also = []Traffic{{Kind: Flood, Factor: 2}} },
	} {
		q := p
		change(&q)
		if _, err := RunRequests(q, rq); err == nil || !strings.Contains(err.Error(), "drawn for another run") {
			t.Errorf("%s changed: %v", name, err)
		}
	}
	p.Faults.Members = []MemberChange{{At: 5 * time.Minute, Gateways: 9}}
	if _, err := DrawRequests(p); err == nil || !strings.Contains(err.Error(), "cannot be drawn ahead") {
		t.Errorf("drawing for a fleet that changes size: %v", err)
	}
	if _, err := RunRequests(p, rq); err == nil || !strings.Contains(err.Error(), "cannot be drawn ahead") {
		t.Errorf("running a fleet that changes size: %v", err)
	}
}

func TestGallop(t *testing.T) {
	ts := []int64{1, 2, 2, 5, 8, 8, 8, 13, 21, 34}
	for end := int64(0); end <= 40; end++ {
		want := 0
		for want < len(ts) && ts[want] < end {
			want++
		}
		for from := 0; from <= want; from++ {
			if got := from + gallop(ts[from:], end); got != want {
				t.Fatalf("from %d before %d: %d, want %d", from, end, got, want)
			}
		}
	}
}

// TestTwinsEqualAcrossFleets holds Params.FleetFree and Params.SyncBlind to
// what they claim, and ScheduledSyncs to what runs count: for every
// registered design, over floods, an attack on an honest key, counters, a
// fixed window and aligned syncs, a sync-blind run's Result at two other
// intervals is its own but for its Params, its Syncs and its store counts,
// a fleet-free one's the same but for its Params alone, and at another
// number of gateways, routing and sync alignment the same but for its
// Params and store counts; neither holds with faults.
func TestTwinsEqualAcrossFleets(t *testing.T) {
	blind, free := 0, 0
	for _, d := range catalog.Names() {
		for i, tr := range []string{"steady:1", "flood:30", "steady:0.8,flood:100+5m", "pageload:0.8"} {
			p := Defaults()
			p.Design, p.Gateways, p.Duration, p.Seed = d, 4, 10*time.Minute, uint64(i+1)
			p.Traffic, p.Also = mustMix(t, tr)
			if info, _ := catalog.Lookup(d); info.FixedWindow || i == 3 {
				p.WindowKind = window.Fixed
			} else if i == 1 {
				p.WindowBuckets = 60
			}
			p.AlignedSync = i == 2
			want := mustRun(t, p)
			mustCountSyncs(t, p, want)
			if !p.SyncBlind() {
				continue
			}
			blind++
			for _, sync := range []time.Duration{300 * time.Millisecond, 7 * time.Second} {
				q := p
				q.Sync = sync
				mustBeTwins(t, q, p, want, p.FleetFree())
			}
			if p.FleetFree() {
				free++
				q := p
				q.Gateways, q.Routing, q.AlignedSync, q.Sync = 7, Uneven, !p.AlignedSync, 2*time.Second
				mustBeTwins(t, q, p, want, false)
			}
			p.Faults.RTT = time.Millisecond
			if p.SyncBlind() || p.FleetFree() {
				t.Fatalf("%v: a twin with faults", p)
			}
		}
	}
	if blind == free || free == 0 {
		t.Fatalf("%d runs sync-blind, %d fleet-free: the test tests one kind or none", blind, free)
	}
}

func mustRun(t *testing.T, p Params) Result {
	t.Helper()
	r, err := Run(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// mustCountSyncs fails unless ScheduledSyncs tells run p's count of syncs.
func mustCountSyncs(t *testing.T, p Params, r Result) {
	t.Helper()
	if n, err := ScheduledSyncs(p); err != nil || n != r.Syncs {
		t.Fatalf("%v: ScheduledSyncs %d (%v), the run counted %d", p, n, err, r.Syncs)
	}
}

// mustBeTwins fails unless run q's Result is want, p's, but for its Params,
// its Syncs and, unless sameStore, its store counts.
func mustBeTwins(t *testing.T, q, p Params, want Result, sameStore bool) {
	t.Helper()
	got := mustRun(t, q)
	mustCountSyncs(t, q, got)
	got.Params, got.Syncs = p, want.Syncs
	if !sameStore {
		got.Store = want.Store
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v: %+v, at %v: %+v", q, got, p, want)
	}
}
