package study

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
)

// Rank puts the candidates within every budget first, cheapest first, then
// the others by how far they miss.
func TestRankFollowsTheBudgets(t *testing.T) {
	b := Budgets{OverX: 1.2, RejectPct: 1, RoundTrips: 10}
	cands := []Candidate{
		{Design: "over", WorstWindowX: 1.5},                                    // misses by 2.5
		{Design: "cheap", WorstWindowX: 1.02, RejectedPct: 0.1},                // 0.1 + 0.1
		{Design: "dear", WorstWindowX: 1.1, RejectedPct: 0.5, RoundTripPct: 5}, // 0.5 + 0.5 + 0.5
		{Design: "trips", WorstWindowX: 1, RoundTripPct: 100},                  // misses by 10
		{Design: "slow", WorstWindowX: 1.02, RejectedPct: 0.1, Sync: time.Second},
	}
	got := Rank(cands, b)
	var order []string
	for _, c := range got {
		order = append(order, c.Design)
	}
	if want := "slow cheap dear over trips"; strings.Join(order, " ") != want {
		t.Fatalf("order %v, want %s", order, want)
	}
	if !got[0].Fits || !got[2].Fits || got[3].Fits || !strings.Contains(got[3].Why, "over-admission") {
		t.Fatalf("fits and why: %+v", got)
	}
}

// advise's figures are the simulator's, and its ranking follows from them.
func TestAdviseFollowsTheSimulatedFigures(t *testing.T) {
	q := Question{Gateways: []int{4}, Syncs: []time.Duration{time.Second, 3 * time.Second}, Limit: 100, Window: time.Minute,
		Honest: sim.Traffic{Kind: sim.Steady, Factor: 0.8}, Routing: sim.Uneven, Threat: sim.Traffic{Kind: sim.Flood, Factor: 30, Target: 1},
		Seeds: 1, Budgets: Budgets{OverX: 1.3, RejectPct: 1, RoundTrips: 50, StoreCalls: 2}}
	cands, err := Advise(context.Background(), q, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != len(BeyondDesigns())*2-1 { // central-log once: it never syncs
		t.Fatalf("%d candidates", len(cands))
	}
	for i, c := range cands {
		pp := q.params(c.Design, 4, c.Sync, 1)
		h, err1 := sim.Run(pp[0])
		f, err2 := sim.Run(pp[1])
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if c.WorstWindowX != f.WorstWindowX || c.RejectedPct != h.RejectedPct || c.RoundTripPct != h.RoundTripPct {
			t.Fatalf("%s Δ=%v: advise says %+v, the simulator %v/%v/%v", c.Design, c.Sync, c, f.WorstWindowX, h.RejectedPct, h.RoundTripPct)
		}
		// the store's load, and the same flood spread over all four gateways
		calls := float64(h.Syncs+h.RoundTrips) / pp[0].Duration.Seconds()
		spread := pp[1]
		spread.Traffic.Target = 0
		sf, err := sim.Run(spread)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(c.StoreCallsPerSec-calls) > 1e-9 || c.SpreadWorstWindowX != sf.WorstWindowX {
			t.Fatalf("%s Δ=%v: store calls %v and spread %v, the simulator %v and %v", c.Design, c.Sync, c.StoreCallsPerSec, c.SpreadWorstWindowX, calls, sf.WorstWindowX)
		}
		fits := c.WorstWindowX <= q.Budgets.OverX && c.RejectedPct <= q.Budgets.RejectPct && c.RoundTripPct <= q.Budgets.RoundTrips &&
			c.StoreCallsPerSec <= q.Budgets.StoreCalls
		if c.Fits != fits {
			t.Fatalf("%s Δ=%v: fits %v, but its figures say %v", c.Design, c.Sync, c.Fits, fits)
		}
		if i > 0 {
			p := cands[i-1]
			if !p.Fits && c.Fits || p.Fits == c.Fits && p.Score > c.Score+1e-12 {
				t.Fatalf("%s (fits %v, score %.3f) ranked after %s (fits %v, score %.3f)", c.Design, c.Fits, c.Score, p.Design, p.Fits, p.Score)
			}
		}
	}
	if !cands[0].Fits || math.IsNaN(cands[0].Score) {
		t.Fatalf("no candidate fits budgets the study's figures meet: first is %+v", cands[0])
	}
}

func TestAdviseBadInput(t *testing.T) {
	good := Question{Gateways: []int{8}, Syncs: []time.Duration{time.Second}, Limit: 100, Window: time.Minute,
		Honest: sim.Traffic{Kind: sim.Steady, Factor: 0.8}, Threat: sim.Traffic{Kind: sim.Flood, Factor: 100}, Seeds: 1,
		Budgets: Budgets{OverX: 1.1, RejectPct: 1, RoundTrips: 10}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*Question)
		want string
	}{
		{func(q *Question) { q.Threat = q.Honest }, "want a flood"},
		{func(q *Question) { q.Honest = q.Threat }, "honest traffic"},
		{func(q *Question) { q.Budgets.OverX = 0.9 }, "at least 1"},
		{func(q *Question) { q.Budgets.RejectPct = -1 }, "percent"},
		{func(q *Question) { q.Seeds = 0 }, "seeds"},
		{func(q *Question) { q.Gateways = nil }, "at least one K"},
		{func(q *Question) { q.Limit = 0 }, "limit"},
		{func(q *Question) { q.Threat.Target = 9 }, "targets 9 gateways of 8"},
		{func(q *Question) { q.Budgets.StoreCalls = -1 }, "max store calls -1"},
		{func(q *Question) { q.Budgets.StoreCalls = math.NaN() }, "max store calls NaN"},
	} {
		q := good
		c.edit(&q)
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error saying %q", err, c.want)
		}
	}
}
