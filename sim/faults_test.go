package sim

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// decision is one decision of a run, as its trace reports it.
type decision struct {
	t int64
	g int
	v design.Verdict
}

// traced runs p in mode md and returns its decisions and result.
func traced(t *testing.T, p Params, md mode) ([]decision, Result) {
	t.Helper()
	tr, res, _ := recordRun(t, p, nil, md)
	return tr, res
}

// With no fault set, the fault engine makes exactly the plain modes'
// decisions: the same requests, at the same times, at the same gateways.
func TestFaultEngineWithoutFaultsEqualsPlain(t *testing.T) {
	traffics := []string{"steady:1", "pageload:0.8", "flood:30", "steady:0.8,flood:100@1+5m"}
	if raceEnabled {
		traffics = traffics[2:]
	}
	for _, name := range catalog.Names() {
		info, _ := catalog.Lookup(name)
		if info.FixedWindow {
			continue
		}
		for _, tr := range traffics {
			for _, k := range []int{1, 4} {
				p := Defaults()
				p.Design, p.Gateways, p.Limit, p.Duration, p.Seed = name, k, 20, 12*time.Minute, uint64(k)
				p.Sync = 300 * time.Millisecond
				p.Traffic, p.Also = mustMix(t, tr)
				want, wantRes := traced(t, p, modeEager)
				got, gotRes := traced(t, p, modeFaulty)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v: the fault engine made %d decisions, eager %d, or different ones", p, len(got), len(want))
				}
				if !reflect.DeepEqual(gotRes.Figures, wantRes.Figures) || gotRes.RoundTrips != wantRes.RoundTrips {
					t.Fatalf("%v: figures differ: engine %+v, eager %+v", p, gotRes.Figures, wantRes.Figures)
				}
			}
		}
	}
}

func floodRun(name string, k int) Params {
	p := Defaults()
	p.Design, p.Gateways, p.Traffic, p.Duration = name, k, Traffic{Kind: Flood, Factor: 100}, 10*time.Minute
	return p
}

// With every sync lost, the sync designs never learn of each other: each
// gateway admits the whole limit alone.
func TestSyncLossOneIsolatesTheGateways(t *testing.T) {
	p := floodRun("shared-counter", 4)
	p.Faults.Loss = 1
	res, err := Run(p)
	if err != nil {
		t.Fatal(err)
	}
	if res.WorstWindowX != 4 {
		t.Fatalf("shared-counter, 4 gateways, every sync lost: worst window %.3f × L, want exactly 4 (each admits L alone)", res.WorstWindowX)
	}
	p.Faults.Loss = 0
	if res, _ := Run(p); res.WorstWindowX >= 3 {
		t.Fatalf("without loss the same run's worst window is %.3f × L; the loss test would not tell", res.WorstWindowX)
	}
	// A lease whose syncs are all lost is never granted a slot; while its
	// sync is out it asks the store's central check, which stays exact.
	p.Design, p.Faults.Loss = "lease", 1
	res, _ = Run(p)
	if res.RoundTrips < res.Requests*99/100 || res.WorstWindowX > 1 {
		t.Fatalf("lease with every sync lost: %d round trips of %d requests, worst window %.3f × L: want nearly every request asked, and at most L", res.RoundTrips, res.Requests, res.WorstWindowX)
	}
}

// With a round trip, the central log decides when the answer arrives, one
// round trip at a time per gateway, and still never admits more than L in
// any window of decision times: with a fixed delay the store's window and
// the decisions' window hold the same admits.
func TestRTTDelaysCentralDecisions(t *testing.T) {
	t.Parallel() // pure runs: the suite's sim step has two cores
	const rtt = 10 * time.Millisecond
	p := floodRun("central-log", 2)
	p.Traffic.Factor = 10 // 16.7 requests/s: the two gateways keep up
	plain, _ := traced(t, p, modeEager)
	p.Faults.RTT = rtt
	delayed, res := traced(t, p, modeAuto)
	if len(delayed) != len(plain) {
		t.Fatalf("%d decisions with a round trip, %d without", len(delayed), len(plain))
	}
	if got, want := delayed[0].t, plain[0].t+int64(rtt); got != want {
		t.Fatalf("first decision at %d, want the first arrival %d + the round trip", got, plain[0].t)
	}
	if res.WorstWindowX != 1 || res.RoundTripPct != 100 {
		t.Fatalf("worst window %.3f × L, round trips %.1f%%: want exactly 1 and 100", res.WorstWindowX, res.RoundTripPct)
	}
	late := 0
	for i := range delayed {
		if delayed[i].t > plain[i].t+int64(rtt) {
			late++ // waited behind another round trip
		}
		if delayed[i].t < plain[i].t+int64(rtt) {
			t.Fatalf("decision %d at %d: before its arrival %d + the round trip", i, delayed[i].t, plain[i].t)
		}
	}
	if late == 0 {
		t.Fatal("no request waited behind another's round trip, at 8 requests/s per gateway and 10 ms each")
	}

	// A flood faster than one gateway's round trips: each decides at most
	// one request per round trip.
	p = floodRun("central-log", 1)
	p.Faults.RTT = rtt
	tr, _ := traced(t, p, modeAuto)
	for i := 1; i < len(tr); i++ {
		if tr[i].t-tr[i-1].t < int64(rtt) {
			t.Fatalf("decisions %d and %d only %v apart: one gateway waits one round trip at a time", i-1, i, time.Duration(tr[i].t-tr[i-1].t))
		}
	}
}

// allPushed pushes what every gateway of r still holds, with a lossless
// sync, and returns the store's count afterwards.
func allPushed(r *runner, now int64) int {
	for _, gw := range r.gws {
		design.Sync(gw, now, r.key.SyncTo)
	}
	return r.key.Count(now)
}

// noExpiry is an honest run whose window outlasts its traffic, at a limit
// nobody reaches: the store's count is every admit it has applied.
func noExpiry(name string) Params {
	p := Defaults()
	p.Design, p.Gateways, p.Limit = name, 3, 1_000_000
	p.Window, p.Duration = 2*time.Hour, 2*time.Hour+time.Minute
	// about 70 requests a second, from 2 minutes on: half the limit in the window
	p.Traffic = Traffic{Kind: Steady, Factor: 0.5, Start: 2 * time.Minute}
	return p
}

func runToEnd(t *testing.T, p Params) (*runner, []decision) {
	t.Helper()
	var tr []decision
	r, err := newRunner(p, func(at int64, g int, v design.Verdict) { tr = append(tr, decision{at, g, v}) }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.execute(modeAuto)
	return r, tr
}

// A retried push never counts an admit twice, nor loses one: with half the
// pushes and pulls lost (and round trips that take time), one last lossless
// sync leaves the store holding exactly the admits made.
func TestRetriedPushesCountOnce(t *testing.T) {
	for _, f := range []Faults{{Loss: 0.5}, {Loss: 0.5, RTT: 20 * time.Millisecond, RTTP99: 200 * time.Millisecond}} {
		for _, name := range []string{"shared-counter", "lease-ask"} {
			p := noExpiry(name)
			p.Faults = f
			r, tr := runToEnd(t, p)
			admits := 0
			for _, d := range tr {
				if d.v == design.Admit {
					admits++
				}
			}
			if got := allPushed(r, r.end); got != admits {
				t.Fatalf("%s %+v: the store counts %d after the last sync, the gateways admitted %d", name, f, got, admits)
			}
		}
	}
}

// A restart loses exactly the admits not yet pushed: those the gateway made
// since its last sync before the restart.
func TestRestartLosesTheUnsyncedAdmits(t *testing.T) {
	const at = 30 * time.Minute
	p := noExpiry("shared-counter")
	p.Faults.Restarts = []Restart{{At: at, Gateway: 1}}
	r, tr := runToEnd(t, p)
	delta := int64(p.Sync)
	lastSync := r.phase[1] + (int64(at)-r.phase[1])/delta*delta // gateway 1's last sync at or before the restart
	admits, lost := 0, 0
	for _, d := range tr {
		if d.v != design.Admit {
			continue
		}
		admits++
		if d.g == 1 && d.t > lastSync && d.t < int64(at) {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("gateway 1 admitted nothing between its last sync and the restart: the test would not tell")
	}
	if got := allPushed(r, r.end); got != admits-lost {
		t.Fatalf("the store counts %d; the fleet admitted %d and the restart lost %d unsynced: want %d", got, admits, lost, admits-lost)
	}
}

// Skewed clocks are drawn within the bound, differ between gateways, and
// change what the store sees.
func TestClockSkewActs(t *testing.T) {
	p := floodRun("shared-counter", 8)
	base, _ := traced(t, p, modeAuto)
	p.Faults.Skew = 20 * time.Second
	skewed, _ := traced(t, p, modeAuto)
	if reflect.DeepEqual(base, skewed) {
		t.Fatal("20 s of clock skew changed no decision")
	}
	seen := map[int64]bool{}
	for _, off := range clockOffsets(p.Faults.Skew, p.Seed, p.Gateways) {
		if off < 0 || off > 2*int64(p.Faults.Skew) {
			t.Fatalf("offset %v outside [0, 2 × skew]", time.Duration(off))
		}
		seen[off] = true
	}
	if len(seen) < 2 {
		t.Fatal("every gateway drew the same clock")
	}
}

func TestFaultsBadInput(t *testing.T) {
	for _, c := range []struct {
		f    Faults
		want string
	}{
		{Faults{RTT: -time.Millisecond}, "rtt"},
		{Faults{RTT: time.Minute}, "rtt"},
		{Faults{RTTP99: time.Millisecond}, "needs a median"},
		{Faults{RTT: 10 * time.Millisecond, RTTP99: time.Millisecond}, "at least"},
		{Faults{Loss: 1.5}, "probability"},
		{Faults{Skew: -time.Second}, "skew"},
		{Faults{Restarts: []Restart{{At: 2 * time.Hour}}}, "inside the run"},
		{Faults{Restarts: []Restart{{At: time.Minute, Gateway: 8}}}, "gateways 0 to 7"},
	} {
		p := Defaults()
		p.Faults = c.f
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error saying %q", c.f, err, c.want)
		}
	}
	for _, s := range []string{"x", "10m:-1", "10m:x", "-5m:0", "10m:1,", ":3"} {
		if _, err := ParseRestarts(s); err == nil {
			t.Errorf("ParseRestarts(%q): no error", s)
		}
	}
	rs, err := ParseRestarts("10m,20m:3,30m:all")
	if err != nil || RestartsString(rs) != "10m0s:0,20m0s:3,30m0s:all" {
		t.Fatalf("ParseRestarts: %v %v", rs, err)
	}
}

// A fleet that changes size: split's quota follows K once the gateways
// learn it (a fleet of 4 shrinking to 2 still admits all of L, where the
// two left with quarter quotas would admit half); lease stays exact and the
// departed gateways' slots come back; and while a join is learnt split
// admits at most the quotas of the old and the new K together.
func TestMembersChanges(t *testing.T) {
	run := func(design string, k int, members string) Result {
		t.Helper()
		ms, err := ParseMembers(members)
		if err != nil {
			t.Fatal(err)
		}
		p := Defaults()
		p.Design, p.Gateways, p.Duration, p.Seed = design, k, 20*time.Minute, 2
		p.Traffic = Traffic{Kind: Flood, Factor: 10}
		p.Faults.Members = ms
		r, err := Run(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := run("split", 4, "5m:2"); r.AdmittedX < 0.97 {
		t.Errorf("split 4 -> 2: admitted_x %.3f, want about 1: the two left must learn K = 2", r.AdmittedX)
	}
	if r := run("lease", 4, "5m:3"); r.AdmittedX < 0.99 || r.WorstWindowX > 1 {
		t.Errorf("lease 4 -> 3: admitted_x %.3f, worst window %.3f: want 1 and at most 1", r.AdmittedX, r.WorstWindowX)
	}
	// 2 gateways at ceil(100/2) and 2 newcomers at ceil(100/4): 150.
	if r := run("split", 2, "5m:4"); r.WorstWindowX > 1.5 || r.AdmittedX < 0.97 {
		t.Errorf("split 2 -> 4: worst window %.3f (bound 1.5), admitted_x %.3f", r.WorstWindowX, r.AdmittedX)
	}
}

func TestMembersBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"5m":     `members "5m": want T:K with T a positive duration, e.g. 5m:9`,
		"5m:0":   `members "5m:0": "0" is not a fleet size of at least 1; want T:K, e.g. 5m:9`,
		"-1m:3":  `members "-1m:3": want T:K with T a positive duration, e.g. 5m:9`,
		"5m:two": `members "5m:two": "two" is not a fleet size of at least 1; want T:K, e.g. 5m:9`,
	} {
		if _, err := ParseMembers(in); err == nil || err.Error() != want {
			t.Errorf("ParseMembers(%q) = %v, want %q", in, err, want)
		}
	}
	p := Defaults()
	p.Faults.Members = []MemberChange{{At: 5 * time.Minute, Gateways: 3}, {At: 2 * time.Minute, Gateways: 2}}
	if err := p.Validate(); err == nil {
		t.Error("members changes out of order were taken")
	}
}

// The lease slots a crashed member held come back: at the end of a run
// whose fleet shrank, the store counts none outstanding for the departed.
func TestMembersSlotsComeBack(t *testing.T) {
	p := Defaults()
	p.Design, p.Gateways, p.Duration, p.Seed = "lease", 4, 20*time.Minute, 3
	p.Traffic = Traffic{Kind: Steady, Factor: 0.8}
	p.Faults.Members = []MemberChange{{At: 5 * time.Minute, Gateways: 2}}
	r, err := newRunner(p, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.execute(modeFaulty)
	for g := 2; g < 4; g++ {
		if out := r.key.OutstandingOf(g); out != 0 {
			t.Errorf("the store counts %d slots outstanding for departed gateway %d", out, g)
		}
	}
}
