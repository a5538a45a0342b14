package sim

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// BenchmarkFlood runs a heavy flood (flood:1000, K = 8, Δ = 1s, 10 simulated
// minutes, about 1.67 million requests) per design (every one that counts
// in a sliding window) on one core and reports simulated requests per
// second.
func BenchmarkFlood(b *testing.B) {
	for _, name := range catalog.Sliding() {
		b.Run(name, func(b *testing.B) {
			p := Defaults()
			p.Design, p.Gateways, p.Traffic, p.Duration = name, 8, Traffic{Kind: Flood, Factor: 1000}, 10*time.Minute
			var requests int64
			b.ReportAllocs()
			for b.Loop() {
				r, err := Run(p)
				if err != nil {
					b.Fatal(err)
				}
				requests += r.Requests
			}
			b.ReportMetric(float64(requests)/b.Elapsed().Seconds(), "req/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkQuietFleet runs a quiet key on a large fleet (steady:0.8,
// K = 32, Δ = 100 ms, an hour: 1.15 million syncs) for headroom, whose idle
// gateways skip their syncs, and permit, whose gateways sync every Δ and
// are re-ranked by the store each time; one run per op.
func BenchmarkQuietFleet(b *testing.B) {
	for _, name := range []string{"headroom", "permit"} {
		b.Run(name, func(b *testing.B) {
			p := Defaults()
			p.Design, p.Gateways, p.Sync, p.Duration = name, 32, 100*time.Millisecond, time.Hour
			p.Traffic = Traffic{Kind: Steady, Factor: 0.8}
			for b.Loop() {
				if _, err := Run(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
