package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// A timeline adds up to the run's own figures: its admits and rejections
// are the run's over the span, and the fleet's count in the window never
// passes the run's worst window; under shared-counter's flood every
// gateway admits before its first sync, which the timeline shows.
func TestTimelineAddsUp(t *testing.T) {
	p := Defaults()
	p.Design, p.Gateways, p.Traffic, p.Duration = "shared-counter", 8, Traffic{Kind: Flood, Factor: 100}, 3*time.Minute
	r, tl, err := RunTimeline(p, time.Second, p.Duration)
	if err != nil {
		t.Fatal(err)
	}
	admits, rejects, most := 0, 0, 0
	for b := range tl.Admits {
		for _, n := range tl.Admits[b] {
			admits += n
		}
		rejects += tl.Rejects[b]
		most = max(most, tl.InWindow[b])
	}
	if int64(admits+rejects) != r.Requests || int64(admits) != r.Admitted {
		t.Fatalf("timeline %d admits + %d rejections, run %d requests, %d admitted", admits, rejects, r.Requests, r.Admitted)
	}
	if float64(most) > r.WorstWindowX*float64(p.Limit)+1e-9 {
		t.Fatalf("timeline's most in a window %d over the run's worst window %.3f × L", most, r.WorstWindowX)
	}
	for g, n := range tl.Admits[0] {
		if n == 0 {
			t.Errorf("gateway %d admitted nothing in the first second of a flood (it knows of no admit before its first sync)", g)
		}
	}
	if _, _, err := RunTimeline(p, time.Millisecond, p.Duration); err == nil {
		t.Fatal("180,000 buckets accepted")
	}
}

// A timeline reads every gateway's view and counts the syncs and round
// trips without changing a decision: its run's figures are those of the
// same run without it, for every design, with and without faults, and its
// round trips add up to the run's.
func TestTimelineChangesNoDecision(t *testing.T) {
	scenarios := map[string]func(*Params){
		"flood":  func(p *Params) { p.Traffic = Traffic{Kind: Flood, Factor: 100} },
		"honest": func(p *Params) { p.Traffic = Traffic{Kind: Steady, Factor: 0.8} },
		"late": func(p *Params) {
			p.Traffic, p.Also = Traffic{Kind: Steady, Factor: 0.5}, []Traffic{{Kind: Flood, Factor: 20, Start: time.Minute}}
		},
		"rtt":     func(p *Params) { p.Traffic, p.Faults.RTT = Traffic{Kind: Steady, Factor: 0.9}, 20*time.Millisecond },
		"outage":  func(p *Params) { p.Faults.Outages = []Outage{{At: 40 * time.Second, For: 20 * time.Second}} },
		"members": func(p *Params) { p.Faults.Members = []MemberChange{{At: 30 * time.Second, Gateways: 12}} },
	}
	for _, d := range catalog.Sliding() {
		if !slices.Contains(design.Names(), d) && !slices.Contains(catalog.Peers(), d) {
			continue // a design this package's tests register for themselves
		}
		for name, set := range scenarios {
			p := Defaults()
			p.Design, p.Gateways, p.Duration, p.Traffic = d, 8, 3*time.Minute, Traffic{Kind: Steady, Factor: 0.8}
			set(&p)
			want, err := Run(p)
			if err != nil {
				t.Fatal(err)
			}
			got, tl, err := RunTimeline(p, 500*time.Millisecond, p.Duration)
			if err != nil {
				t.Fatal(err)
			}
			if got.Requests != want.Requests || got.Admitted != want.Admitted || got.RoundTrips != want.RoundTrips ||
				got.Fallbacks != want.Fallbacks || got.Figures != want.Figures {
				t.Errorf("%s %s: timeline's run %+v, the run's %+v", d, name, got.Figures, want.Figures)
			}
			trips := 0
			for b, n := range tl.RoundTrips {
				trips += n
				for g, v := range tl.Views[b] {
					if v < -1 || v == -1 && g < p.Gateways && len(p.Faults.Members) == 0 {
						t.Fatalf("%s %s: gateway %d's view %d at bucket %d", d, name, g, v, b)
					}
				}
			}
			if int64(trips) != got.RoundTrips {
				t.Errorf("%s %s: timeline's %d round trips, the run's %d", d, name, trips, got.RoundTrips)
			}
		}
	}
}
