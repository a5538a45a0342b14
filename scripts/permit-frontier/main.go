// Command permit-frontier measures what permit's reserve trades: the spare
// slots the syncs do not lend, kept for the central checks of gateways that
// hold none. Lending more places more slots (fewer round trips) and leaves
// the central checks less room while every slot is out (honest requests
// refused that the window had room for). For each scenario of issue 33's
// targets that binds, at L = 100 per minute and a tolerance of 0.1 (a spare
// of 10 slots), it prints one markdown row: permit's round_trip_pct and its
// rejected_pct past central-log's on the same requests, at each reserve,
// each a mean over the seeds.
//
//	go run ./scripts/permit-frontier
//	go run ./scripts/permit-frontier -seeds 5 -duration 60m
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// scenario is one row: K gateways, a routing, Δ and an honest traffic.
type scenario struct {
	k       int
	routing sim.Routing
	sync    time.Duration
	traffic string
}

var scenarios = []scenario{
	{16, sim.Even, time.Second, "steady:0.8"},
	{16, sim.Uneven, time.Second, "steady:0.8"},
	{32, sim.Uneven, 100 * time.Millisecond, "steady:0.8"},
	{32, sim.Uneven, time.Second, "steady:0.8"},
	{32, sim.Even, time.Second, "steady:0.8"},
	{32, sim.Even, 10 * time.Second, "pageload:0.5"},
	{64, sim.Even, time.Second, "pageload:0.5"},
	{128, sim.Even, time.Second, "pageload:0.5"},
}

func main() {
	seeds := flag.Int("seeds", 3, "seeds per scenario")
	length := flag.Duration("duration", 300*time.Minute, "simulated time of a run")
	flag.Parse()
	if *seeds < 1 || *length <= time.Minute {
		log.Fatalf("want -seeds ≥ 1 and -duration longer than the minute's window; got %d and %v", *seeds, *length)
	}
	spare := int(math.Floor(design.PermitTolerance * float64(sim.Defaults().Limit)))
	reserves := []int{design.PermitReserve(spare), 0, 1, 3, 4} // the registered permit's first
	names := []string{"central-log"}
	for _, r := range reserves {
		name := fmt.Sprintf("permit@reserve%d", r)
		err := catalog.Register(catalog.Info{Name: name, Leases: true, Spare: true, BusySyncs: true,
			New: func(c design.Config) design.Gateway { return design.NewPermitReserve(c, design.PermitTolerance, r) }})
		if err != nil {
			log.Fatal(err)
		}
		names = append(names, name)
	}
	figures := runAll(names, *seeds, *length)
	head := []string{"K", "routing", "Δ", "traffic", "central-log rejected_pct"}
	for i, r := range reserves {
		label := fmt.Sprintf("reserve %d", r)
		if i == 0 {
			label += " (permit's)"
		}
		head = append(head, label)
	}
	fmt.Printf("round_trip_pct / rejected_pct past central-log's (points), L = %d/min, spare %d\n", sim.Defaults().Limit, spare)
	fmt.Println()
	fmt.Printf("| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for i, s := range scenarios {
		central := figures[i][0].RejectedPct
		fmt.Printf("| %d | %s | %v | %s | %.3f |", s.k, s.routing, s.sync, s.traffic, central)
		for _, f := range figures[i][1:] {
			fmt.Printf(" %.2f / %+.2f |", f.RoundTripPct, points(f.RejectedPct-central))
		}
		fmt.Println()
	}
}

// points rounds a difference of percentages to two places, without the
// sign of a negative zero.
func points(d float64) float64 { return math.Round(d*100)/100 + 0 }

// runAll runs every design of names through every scenario over seeds 1..n
// on all cores, and returns the mean figures by scenario and design.
func runAll(names []string, n int, length time.Duration) [][]sim.Figures {
	results := make([][][]sim.Result, len(scenarios))
	jobs := make(chan func())
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for job := range jobs {
				job()
			}
		})
	}
	for i, s := range scenarios {
		results[i] = make([][]sim.Result, len(names))
		for j, name := range names {
			results[i][j] = make([]sim.Result, n)
			for seed := range n {
				jobs <- func() { results[i][j][seed] = run(s, name, seed+1, length) }
			}
		}
	}
	close(jobs)
	wg.Wait()
	figures := make([][]sim.Figures, len(scenarios))
	for i := range results {
		for _, rs := range results[i] {
			figures[i] = append(figures[i], sim.Mean(rs))
		}
	}
	return figures
}

// run is one seed of one design through one scenario.
func run(s scenario, name string, seed int, length time.Duration) sim.Result {
	mix, err := sim.ParseMix(s.traffic)
	if err != nil {
		log.Fatal(err)
	}
	p := sim.Defaults()
	p.Design, p.Gateways, p.Routing, p.Sync, p.Duration = name, s.k, s.routing, s.sync, length
	p.Traffic, p.Seed = mix[0], uint64(seed)
	r, err := sim.Run(p)
	if err != nil {
		log.Fatal(err)
	}
	return r
}
