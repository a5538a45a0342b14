package design

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/window"
)

// A history's snapshot re-seeds every admit that still counts, no sooner
// than it was made and at most a bucket later: for random admits over three
// windows, at random instants, the snapshot's count of each (t − W, t] is at
// least the admits' own, for the whole window ahead (each snapshot stamp
// counts as long as an admit it stands for), and the snapshot never holds
// an admit that has left.
func TestHistoryCoversTheWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, spec := range []window.Spec{{Size: time.Minute}, {Size: 10 * time.Second, Kind: window.Fixed}, {Size: 7 * time.Second}} {
		h := newHistory(spec)
		var admits []int64
		now := int64(0)
		for range 3000 {
			now += rng.Int64N(int64(spec.Size) / 500)
			if rng.IntN(3) == 0 {
				n := 1 + rng.IntN(3)
				h.add(spec.Stamp(now), n)
				for range n {
					admits = append(admits, now)
				}
			}
			if rng.IntN(50) != 0 {
				continue
			}
			stamps, counts := h.snapshot(now)
			for _, later := range []int64{0, int64(spec.Size) / 3, int64(spec.Size) - 1} {
				at := now + later
				lo := spec.Lo(at)
				real, seeded := 0, 0
				for _, a := range admits {
					if a >= lo && a <= now {
						real++
					}
				}
				for i, s := range stamps {
					if s >= lo {
						seeded += counts[i]
					}
				}
				if seeded < real {
					t.Fatalf("%v: at %v, %v on, the snapshot counts %d of %d admits", spec, time.Duration(now), time.Duration(later), seeded, real)
				}
			}
			for i, s := range stamps {
				if s > now || s < spec.Lo(now) || counts[i] <= 0 {
					t.Fatalf("%v: snapshot stamp %v (count %d) at %v: outside the window", spec, time.Duration(s), counts[i], time.Duration(now))
				}
			}
		}
	}
}
