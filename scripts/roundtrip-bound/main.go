// Command roundtrip-bound prints the fewest round trips any design can make
// on a quiet key (the lower bound, study.RoundTripBound, whose
// comment derives it), beside what the chosen designs make in the
// simulator, for K = 8 to 128 gateways.
//
//	go run ./scripts/roundtrip-bound
//	go run ./scripts/roundtrip-bound -designs permit -duration 60m
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

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/study"
)

func main() {
	limit := flag.Int("limit", 100, "L, per minute")
	load := flag.Float64("load", 0.8, "the honest client's load, × L")
	eps := flag.Float64("eps", 0.1, "the worst window's budget past L, × L")
	seeds := flag.Int("seeds", 3, "seeds per simulated scenario")
	length := flag.Duration("duration", 300*time.Minute, "simulated time of a run")
	names := flag.String("designs", "permit,headroom,lease-ask", "the designs to simulate, comma-separated")
	flag.Parse()
	if *limit < 1 || !(*load > 0) || !(*eps >= 0) || *seeds < 1 || *length <= time.Minute {
		log.Fatalf("want -limit ≥ 1, -load > 0, -eps ≥ 0, -seeds ≥ 1 and -duration longer than the minute's window; got %d, %g, %g, %d, %v",
			*limit, *load, *eps, *seeds, *length)
	}
	designs := strings.Split(*names, ",")
	ks := []int{8, 16, 32, 64, 128}
	routings := []sim.Routing{sim.Even, sim.Uneven}
	type cell struct {
		k       int
		routing sim.Routing
		design  string
		rt      float64
	}
	var cells []*cell
	for _, k := range ks {
		for _, r := range routings {
			for _, d := range designs {
				cells = append(cells, &cell{k: k, routing: r, design: d})
			}
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, c := range cells {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var sum float64
			for s := 1; s <= *seeds; s++ {
				p := sim.Defaults()
				p.Design, p.Gateways, p.Sync, p.Limit, p.Routing, p.Duration, p.Seed = c.design, c.k, time.Second, *limit, c.routing, *length, uint64(s)
				p.Traffic = sim.Traffic{Kind: sim.Steady, Factor: *load}
				res, err := sim.Run(p)
				if err != nil {
					log.Fatal(err)
				}
				sum += res.RoundTripPct
			}
			c.rt = sum / float64(*seeds)
		})
	}
	wg.Wait()
	fmt.Printf("L = %d per minute, an honest client at %g × L, worst window budget (1 + %g) × L, Δ = 1 s, %d seeds of %v\n\n",
		*limit, *load, *eps, *seeds, *length)
	fmt.Printf("| K | routing | lower bound | %s |\n", strings.Join(designs, " | "))
	fmt.Printf("|---|---|---|%s\n", strings.Repeat("---|", len(designs)))
	at := func(k int, r sim.Routing, d string) float64 {
		for _, c := range cells {
			if c.k == k && c.routing == r && c.design == d {
				return c.rt
			}
		}
		return math.NaN()
	}
	for _, k := range ks {
		for _, r := range routings {
			fmt.Printf("| %d | %v | %.2f%% |", k, r, 100*study.RoundTripBound(k, r, *limit, *load, *eps))
			for _, d := range designs {
				fmt.Printf(" %.2f%% |", at(k, r, d))
			}
			fmt.Println()
		}
	}
}
