// Command headroom-frontier measures what headroom's tolerance t trades: a
// quiet gateway's free local admit (fewer round trips for honest clients)
// against what a flood starting at every gateway at once can pass (the worst
// window). For each K and t it runs, in the simulator at L = 100 per minute
// and Δ = 1 s, honest steady:0.8 traffic (even and uneven routing) and floods
// from the start and suddenly on an honest key, and prints one markdown row:
// the larger round_trip_pct and rejected_pct of the two routings, and the
// largest admitted_x and worst_window_x over the floods, each a mean over
// the seeds.
//
//	go run ./scripts/headroom-frontier
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

var (
	honest = []string{"steady:0.8"}
	floods = []string{"flood:3", "flood:10", "flood:30", "flood:100", "flood:1000",
		"steady:0.8,flood:30+10m", "steady:0.8,flood:1000+10m"}
)

func main() {
	seeds := flag.Int("seeds", 3, "seeds per scenario")
	flag.Parse()
	tolerances := []float64{0, 0.1, 0.2, 0.32}
	for _, t := range tolerances {
		name := fmt.Sprintf("headroom@%g", t)
		if err := catalog.Register(catalog.Info{Name: name, New: func(c design.Config) design.Gateway { return design.NewHeadroom(c, t) }}); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("| K | t | spare (K ≤ t·L) | round_trip_pct | rejected_pct | floods: admitted_x | floods: worst_window_x |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, k := range []int{8, 16, 32} {
		for _, t := range tolerances {
			row(k, t, *seeds)
		}
	}
}

// row measures one K and tolerance and prints its row.
func row(k int, t float64, seeds int) {
	name := fmt.Sprintf("headroom@%g", t)
	var trips, rejected, admitted, worst float64
	for _, rt := range []sim.Routing{sim.Even, sim.Uneven} {
		for _, tr := range honest {
			m := mean(params(name, k, tr, rt, time.Hour), seeds)
			trips, rejected = math.Max(trips, m.RoundTripPct), math.Max(rejected, m.RejectedPct)
		}
	}
	for _, tr := range floods {
		m := mean(params(name, k, tr, sim.Even, 20*time.Minute), seeds)
		admitted, worst = math.Max(admitted, m.AdmittedX), math.Max(worst, m.WorstWindowX)
	}
	fmt.Printf("| %d | %g | %v | %.2f | %.2f | %.3f | %.3f |\n", k, t, float64(k) <= t*100, trips, rejected, admitted, worst)
}

func params(name string, k int, traffic string, rt sim.Routing, d time.Duration) sim.Params {
	mix, err := sim.ParseMix(traffic)
	if err != nil {
		log.Fatal(err)
	}
	p := sim.Defaults()
	p.Design, p.Gateways, p.Routing, p.Duration = name, k, rt, d
	p.Traffic, p.Also = mix[0], mix[1:]
	return p
}

// mean runs p over seeds 1..n in parallel and averages the figures.
func mean(p sim.Params, n int) sim.Figures {
	res := make([]sim.Result, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			q := p
			q.Seed = uint64(i + 1)
			r, err := sim.Run(q)
			if err != nil {
				log.Fatal(err)
			}
			res[i] = r
		}()
	}
	wg.Wait()
	var f sim.Figures
	for _, r := range res {
		f.Add(r.Figures)
	}
	f.Div(float64(n))
	return f
}
