// Command roundtrip-bound prints the fewest round trips any design can make
// on a quiet key (issue 33's lower bound), beside what headroom and
// lease-ask make in the simulator, for K = 8 to 128 gateways.
//
// The bound. A gateway that admits a request without a round trip does so
// on what the store told it at its last contact; a design whose worst window
// must stay within (1+ε)·L whatever a flood does must hold, at every
// instant, count + Σ a_i ≤ (1+ε)·L, where count is the store's and a_i the
// requests gateway i would admit now with no further contact (a flood may
// spend every a_i at once). The a_i are whole, so at most
// B = ⌊(1+ε)·L − count⌋ gateways can admit anything alone. An honest request
// that reaches any other gateway waits on the store (or is refused, which
// the rejection target forbids). So the share of honest requests
// that wait is at least E[1 − (the most routing mass B gateways can hold)]:
// even routing, 1 − B/K; uneven (gateway i ∝ 1/i), 1 − H_B/H_K. Syncs are
// free here and permits are placed by an oracle that knows the routing, so
// every real design needs more; count is the window's count of an honest
// client at load f, Poisson with mean f·L (capped at L).
//
//	go run ./scripts/roundtrip-bound
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
)

func main() {
	limit := flag.Int("limit", 100, "L, per minute")
	load := flag.Float64("load", 0.8, "the honest client's load, × L")
	eps := flag.Float64("eps", 0.1, "the worst window's budget past L, × L")
	seeds := flag.Int("seeds", 3, "seeds per simulated scenario")
	length := flag.Duration("duration", 300*time.Minute, "simulated time of a run")
	flag.Parse()
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
			for _, d := range []string{"headroom", "lease-ask"} {
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
	fmt.Println("| K | routing | lower bound | headroom | lease-ask |")
	fmt.Println("|---|---|---|---|---|")
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
			fmt.Printf("| %d | %v | %.2f%% | %.2f%% | %.2f%% |\n", k, r, 100*bound(k, r, *limit, *load, *eps),
				at(k, r, "headroom"), at(k, r, "lease-ask"))
		}
	}
}

// bound is the least share of honest requests that wait on the store, at K
// gateways under routing r: E over the window's count N ~ Poisson(load·L)
// (capped at L) of the routing mass the B = ⌊(1+ε)L − N⌋ likeliest gateways
// cannot hold.
func bound(k int, r sim.Routing, limit int, load, eps float64) float64 {
	mean := load * float64(limit)
	var total, mass float64
	p := math.Exp(-mean) // P(N = 0)
	for n := 0; n <= 10*limit; n++ {
		if n > 0 {
			p *= mean / float64(n)
		}
		count := min(n, limit)
		b := int(math.Floor((1+eps)*float64(limit) - float64(count)))
		total += p * (1 - held(k, r, b))
		mass += p
	}
	return total / mass
}

// held is the routing mass of the b likeliest of k gateways.
func held(k int, r sim.Routing, b int) float64 {
	b = max(min(b, k), 0)
	if r == sim.Even {
		return float64(b) / float64(k)
	}
	var hb, hk float64
	for i := 1; i <= k; i++ {
		if i <= b {
			hb += 1 / float64(i)
		}
		hk += 1 / float64(i)
	}
	return hb / hk
}
