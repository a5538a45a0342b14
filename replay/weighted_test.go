package replay

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/accesslog"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// The driver of requests with costs, given requests of cost 1, makes every
// design's very decisions of the simulator's runs: same admits, same
// disagreements with the exact limit, same round trips and worst window.
func TestWeightedDriverMatchesTheSimulator(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var rel []int64
	var g, ones []uint16
	for at := int64(0); at < int64(20*time.Minute); at += int64(rng.ExpFloat64() * float64(200*time.Millisecond)) {
		rel, g, ones = append(rel, at), append(g, uint16(rng.IntN(8))), append(ones, 1)
	}
	for _, d := range catalog.Names() {
		info, _ := catalog.Lookup(d)
		kind := window.Sliding
		if info.FixedWindow {
			kind = window.Fixed
		}
		p := sim.Params{Design: d, Gateways: 8, Sync: time.Second, Limit: 100, Window: time.Minute, WindowKind: kind,
			Routing: sim.Even, Duration: time.Duration(rel[len(rel)-1] + 1), Seed: 9,
			Traffic: sim.Traffic{Kind: sim.Steady, Factor: float64(len(rel)) * float64(time.Minute) / (100 * float64(rel[len(rel)-1]+1))}}
		exact := make([]bool, len(rel))
		ex := p
		ex.Design = Exact
		rq, err := sim.NewRequests(ex, rel, g)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runDesign(ex, rq, exact, true); err != nil {
			t.Fatal(err)
		}
		want, err := runDesign(p, rq, exact, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := runWeighted(p, rel, g, ones, exact, false)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: the driver of costs %+v, the simulator %+v", d, got, want)
		}
	}
}

// A CSV with costs: the exact limit admits what an exact count of costs
// here admits, and a cost past MaxCost stops the replay with its line.
func TestReplayWithCosts(t *testing.T) {
	var b strings.Builder
	start := int64(1796428800)
	type req struct {
		t    int64
		cost int
	}
	var reqs []req
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 600 {
		c := 1 + rng.IntN(5)
		at := (start*1000 + int64(i)*250) * 1e6 // four a second
		reqs = append(reqs, req{at, c})
		fmt.Fprintf(&b, "%d.%03d,acct,,%d\n", at/1e9, at%1e9/1e6, c)
	}
	want := 0 // 60 units a minute, sliding
	var admits []req
	for _, r := range reqs {
		in := 0
		for _, a := range admits {
			if a.t > r.t-int64(time.Minute) {
				in += a.cost
			}
		}
		if in+r.cost <= 60 {
			admits = append(admits, r)
			want++
		}
	}
	r, err := accesslog.NewReader(strings.NewReader(b.String()), accesslog.Options{Format: accesslog.CSV})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(r, Options{Designs: []string{"shared-counter", "headroom"}, Gateways: 4, Sync: time.Second, Limit: Limit{60, time.Minute}, Routing: Even, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Figures[Exact].Admitted; got != int64(want) || rep.Figures[Exact].WorstWindowX > 1 {
		t.Fatalf("the exact limit admitted %d of cost, worst window %.3f; the count here %d", got, rep.Figures[Exact].WorstWindowX, want)
	}
	r, _ = accesslog.NewReader(strings.NewReader("1796428800,acct,,70000\n"), accesslog.Options{Format: accesslog.CSV})
	if _, err := Run(r, Options{Gateways: 1, Sync: time.Second, Limit: Limit{60, time.Minute}, Routing: Even}); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a cost of 70,000: %v", err)
	}
}
