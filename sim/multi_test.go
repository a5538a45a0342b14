package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// multiDesigns are the designs to run on a key with several limits, each with
// the window kind it counts in.
func multiDesigns() map[string]window.Kind {
	out := map[string]window.Kind{}
	for _, n := range catalog.Names() {
		info, _ := catalog.Lookup(n)
		if info.Peer { // other systems' algorithms count by their own rules (Kong's refused requests too)
			continue
		}
		out[n] = window.Sliding
		if info.FixedWindow {
			out[n] = window.Fixed
		}
	}
	return out
}

// TestSeveralLimitsCountOnlyAdmits floods a key with a per-second and a
// per-hour limit at every design, and a per-second and a per-day limit
// (upstream's issue #262: 10 a second and 250 a day), and checks, against
// the store's own logs after a last sync of every gateway, that each limit
// counted exactly the requests admitted (a request one limit refused spent
// none of the other), and that no limit was passed by more than its design
// allows.
func TestSeveralLimitsCountOnlyAdmits(t *testing.T) {
	t.Parallel() // pure runs: the suite's sim step has two cores
	for _, c := range []struct {
		also     Limit
		duration time.Duration
	}{{Limit{600, time.Hour}, 2 * time.Hour}, {Limit{250, 24 * time.Hour}, 25 * time.Hour}} {
		t.Run(c.also.String(), func(t *testing.T) { countOnlyAdmits(t, c.also, c.duration) })
	}
}

// countOnlyAdmits is TestSeveralLimitsCountOnlyAdmits for 10 a second and
// also, a flood of 20 a second for d.
func countOnlyAdmits(t *testing.T, also Limit, d time.Duration) {
	for name, kind := range multiDesigns() {
		t.Run(name, func(t *testing.T) {
			p := Defaults()
			p.Design, p.WindowKind, p.Gateways, p.Sync = name, kind, 4, 100*time.Millisecond
			p.Limit, p.Window = 10, time.Second
			p.Limits = []Limit{also}
			p.Traffic = Traffic{Kind: Flood, Factor: 2} // 20 a second: the second refuses half, the longer limit all but its own
			p.Duration = d
			var stamps []int64
			r, err := newRunner(p, func(at int64, g int, v design.Verdict) {
				if v == design.Admit {
					stamps = append(stamps, at)
				}
			}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.execute(modeAuto)
			res := r.m.result(r.end)
			res.Limits = r.multi.limitResults(p, r.end)
			end := r.end - 1
			for g := range r.multi.gws {
				r.syncMulti(end, g)
			}
			if int64(len(stamps)) != res.Admitted {
				t.Fatalf("traced %d admits, result says %d", len(stamps), res.Admitted)
			}
			wins := []time.Duration{p.Window, also.Window}
			limits := []int{p.Limit, also.Requests}
			for i, key := range r.multi.keys {
				spec := window.Spec{Size: wins[i], Kind: kind}
				in := 0
				for _, s := range stamps {
					if s >= spec.Lo(end) {
						in++
					}
				}
				if kind == window.Fixed { // central-counter: the counter counts refused requests on the limit they passed
					if c := key.Counter(end, 0); c < in {
						t.Errorf("limit %d/%v: the counter holds %d, fewer than the %d admitted", limits[i], wins[i], c, in)
					}
					continue
				}
				if got := key.Count(end); got != in {
					t.Errorf("limit %d/%v: the store counts %d in the last window, %d were admitted", limits[i], wins[i], got, in)
				}
			}
			if res.Limits[0].Limit != also.String() {
				t.Fatalf("limit results %+v", res.Limits)
			}
			// the longer limit binds: within the design's flood bound of it, in
			// every window (admitted_x needs many windows after the first; a
			// day's run has one hour of them)
			if w := res.Limits[0].WorstWindowX; w > float64(p.Gateways) || (name == "central-log" && w > 1) || w < 0.5 {
				t.Errorf("worst window against %v is %.3f", also, w)
			}
			// the second holds what its design holds alone
			if name == "central-log" && (res.Limits[0].WorstWindowX > 1 || res.WorstWindowX > 1) {
				t.Errorf("central-log passed a limit: worst windows %.2f and %.2f", res.WorstWindowX, res.Limits[0].WorstWindowX)
			}
		})
	}
}

// TestSeveralLimitsExactWhenAlone checks that a key whose further limit
// never binds admits exactly what the key alone does, with the same round
// trips, but for lease-ask, whose further limit asks for slots of its own.
func TestSeveralLimitsExactWhenAlone(t *testing.T) {
	for _, name := range []string{"central-log", "shared-counter", "headroom", "lease-ask", "split"} {
		p := Defaults()
		p.Design, p.Traffic, p.Duration = name, Traffic{Kind: Flood, Factor: 3}, 20*time.Minute
		alone, err := Run(p)
		if err != nil {
			t.Fatal(err)
		}
		p.Limits = []Limit{{1_000_000, time.Minute}}
		both, err := Run(p)
		if err != nil {
			t.Fatal(err)
		}
		if alone.Admitted != both.Admitted || (alone.RoundTrips != both.RoundTrips) != (name == "lease-ask") {
			t.Errorf("%s: alone %d admitted, %d round trips; with a limit that never binds %d, %d",
				name, alone.Admitted, alone.RoundTrips, both.Admitted, both.RoundTrips)
		}
	}
}

func TestSeveralLimitsRefused(t *testing.T) {
	p := Defaults()
	p.Limits = []Limit{{10, 2 * time.Hour}}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "longer than its window") {
		t.Errorf("a limit longer than the run: %v", err)
	}
	p.Limits = []Limit{{0, time.Second}}
	if err := p.Validate(); err == nil {
		t.Error("a limit of 0 requests was taken")
	}
	p.Limits = []Limit{{10, time.Second}}
	p.Faults.RTT = time.Millisecond
	if err := p.Validate(); err == nil {
		t.Error("faults with several limits were taken")
	}
	for _, bad := range []string{"10", "x/1s", "10/s", "10/"} {
		if _, err := ParseLimit(bad); err == nil {
			t.Errorf("ParseLimit(%q) took it", bad)
		}
	}
	if l, err := ParseLimit("250/24h"); err != nil || l != (Limit{250, 24 * time.Hour}) {
		t.Errorf("ParseLimit(250/24h) = %v, %v", l, err)
	}
}
