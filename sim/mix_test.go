package sim

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

// The traffic grammar: every option parses and prints back the same, and
// a bad one is refused with what it wants.
func TestParseMix(t *testing.T) {
	for _, s := range []string{"steady:0.8", "flood:100@1", "flood:100+10m0s", "flood:1000~5s/55s", "steady:0.8,flood:100@2+20m0s~1s/9s", "pageload:0.5,flood:3"} {
		mix, err := ParseMix(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		p := Params{Traffic: mix[0], Also: mix[1:]}
		if got := p.MixString(); got != s {
			t.Errorf("%s prints as %s", s, got)
		}
	}
	for _, s := range []string{"flood:100@0", "flood:100@x", "flood:100+0s", "flood:100+-1s", "flood:100~5s", "flood:100~5s/0s", "flood:100,", "gust:3"} {
		if _, err := ParseMix(s); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("%s: %v, want an error that says what it wants", s, err)
		}
	}
}

// A targeted flood reaches only its gateways; a late one nothing before its
// start; a pulsed one nothing in its off periods; and each traffic's
// counts add up to the run's.
func TestMixShapes(t *testing.T) {
	p := Defaults()
	p.Design, p.Duration, p.Gateways = "split", 10*time.Minute, 8
	mix, _ := ParseMix("steady:0.8,flood:50@2+2m~10s/20s")
	p.Traffic, p.Also = mix[0], mix[1:]
	var floodGws = map[int]bool{}
	var early, off int
	res, err := RunTrace(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The flood's arrivals, from a run of the flood alone with the same
	// part streams: a second run where the honest part is a trickle.
	p2 := p
	p2.Traffic = Traffic{Kind: Steady, Factor: 1e-9}
	_, err = RunTrace(p2, func(at int64, g int, v design.Verdict) {
		floodGws[g] = true
		if at < int64(2*time.Minute) {
			early++
		}
		if (at-int64(2*time.Minute))%int64(30*time.Second) >= int64(10*time.Second) {
			off++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(floodGws) != 2 || early != 0 || off != 0 {
		t.Fatalf("the flood reached %d gateways (want 2), had %d arrivals before its start and %d in its off periods", len(floodGws), early, off)
	}
	var sum Counts
	for _, pt := range res.Parts {
		sum.Requests += pt.Before.Requests + pt.During.Requests
		sum.Rejected += pt.Before.Rejected + pt.During.Rejected
	}
	if sum.Requests != res.Requests || sum.Rejected != res.Rejected || res.Parts[1].Before.Requests != 0 {
		t.Fatalf("parts %+v do not add up to %d requests, %d rejected", res.Parts, res.Requests, res.Rejected)
	}
	if res.AttackStart != 2*time.Minute || !(res.AttackWindowX > 0) || res.AttackWindowX > res.WorstWindowX {
		t.Fatalf("attack at %v, its window %v (worst window %v)", res.AttackStart, res.AttackWindowX, res.WorstWindowX)
	}
	// The expected requests count the pulse and the start: a run that
	// would be too large or too small says so before it runs.
	if got, want := p.expected(), 0.8*100*10+50*100*8*(1.0/3); math.Abs(got-want) > 1e-6*want {
		t.Fatalf("expected requests %v, want %v", got, want)
	}
}

// The same mix and seed make the same run, in the eager and the lazy mode.
func TestMixIsDeterministic(t *testing.T) {
	p := Defaults()
	p.Design, p.Duration = "shared-counter", 5*time.Minute
	mix, _ := ParseMix("steady:0.5,flood:20@1+1m")
	p.Traffic, p.Also = mix[0], mix[1:]
	a, _, err := run(p, nil, modeEager)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := run(p, nil, modeLazy)
	c, _, _ := run(p, nil, modeEager)
	if a.Admitted != b.Admitted || a.Admitted != c.Admitted || a.Parts[0] != b.Parts[0] || a.AttackWindowX != b.AttackWindowX {
		t.Fatalf("eager %+v, lazy %+v, eager again %+v", a.Parts, b.Parts, c.Parts)
	}
}

// The max-min lease policy keeps lease exact (no window past L) and
// changes its figures; it applies to lease designs only.
func TestMaxMinLeasePolicy(t *testing.T) {
	p := Defaults()
	p.Design, p.Gateways, p.Routing, p.Duration = "lease", 32, Uneven, 20*time.Minute
	first, err := Run(p)
	if err != nil {
		t.Fatal(err)
	}
	p.LeasePolicy = MaxMin
	fair, err := Run(p)
	if err != nil {
		t.Fatal(err)
	}
	if fair.WorstWindowX > 1 || fair.RejectedPct == first.RejectedPct {
		t.Fatalf("max-min: worst window %v (must be at most 1), rejected %.2f%% (first-come %.2f%%)", fair.WorstWindowX, fair.RejectedPct, first.RejectedPct)
	}
	p.Design = "shared-counter"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "holds no leases") {
		t.Fatalf("max-min on shared-counter: %v", err)
	}
}
