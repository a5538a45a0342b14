package sim

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSlideMatchesCounting holds the worst sliding window's one comparison
// a request to the deque that counts every window, over bursts, gaps and
// ties.
func TestSlideMatchesCounting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	trials := 100
	if raceEnabled {
		trials = 25 // one goroutine: the race detector only slows it
	}
	for trial := range trials {
		p := Defaults()
		ring, deque := newMeter(p, false), newMeter(p, false)
		deque.attack = 1 << 62 // counting, but no window holds the attack
		now := int64(0)
		for range 1 + rng.IntN(5000) {
			switch rng.IntN(8) {
			case 3: // a steady stretch, whose windows hold the worst exactly
				step := 1 + rng.Int64N(int64(time.Second)/int64(1+trial%50))
				for range rng.IntN(8000) {
					now += step
					ring.slide(now)
					deque.slideCounting(now)
				}
			case 0: // a gap, often past the window
				now += rng.Int64N(2 * int64(time.Minute))
			case 1: // a tie
			case 2: // an admit just as one leaves the window, or just before
				now += int64(time.Minute) - rng.Int64N(2)
			default: // a burst
				now += rng.Int64N(int64(time.Second) / int64(1+trial%50) / int64(1+trial%7*100))
			}
			ring.slide(now)
			deque.slideCounting(now)
			if ring.worst != deque.worst {
				t.Fatalf("trial %d at %d: worst %d, want %d", trial, now, ring.worst, deque.worst)
			}
		}
	}
}
