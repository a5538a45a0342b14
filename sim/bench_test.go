package sim

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
)

// BenchmarkFlood runs a heavy flood (flood:1000, K = 8, Δ = 1s, 10 simulated
// minutes, about 1.67 million requests) per design (every one that counts
// in a sliding window) on one core and reports simulated requests per
// second.
func BenchmarkFlood(b *testing.B) {
	for _, name := range design.Sliding() {
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
