package design_test

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// BenchmarkDecide: one gateway of K = 8 deciding requests 1 µs apart on a
// key whose limit (10^9 a second) they never reach, syncing with an
// embedded store every 1,000 requests (Δ = 1 ms), the sync's cost shared
// out, after two windows of the same traffic (headroom sizes its budget
// from the last window's arrivals). round-trips/op is the share of
// decisions that asked the store.
func BenchmarkDecide(b *testing.B) {
	for _, name := range design.Sliding() {
		b.Run(name, func(b *testing.B) {
			spec := window.Spec{Size: time.Second}
			c := design.Config{Limit: 1e9, Window: spec, Gateways: 8, Sync: time.Millisecond}
			g, err := design.New(name, c)
			if err != nil {
				b.Fatal(err)
			}
			key := memstore.NewKey(c.Limit, spec)
			var now int64
			step := func() bool {
				now += int64(time.Microsecond)
				if now%int64(c.Sync) == 0 {
					design.Sync(g, now, key.SyncTo)
				}
				v, q := g.Decide(now, 1)
				if v == design.Ask {
					g.Resume(now, 1, q, key.Answer(now, 0, q))
					return true
				}
				return false
			}
			for i := 0; i < 2_000_000; i++ {
				step()
			}
			trips := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if step() {
					trips++
				}
			}
			b.ReportMetric(float64(trips)/float64(b.N), "round-trips/op")
		})
	}
}
