package sim

import "testing"

// TestUnevenPickMatchesScan holds the uneven router, which starts its scan
// of the cumulative probabilities where the draw's 64th falls, to the
// plain scan from the first gateway: the same gateway for every draw.
func TestUnevenPickMatchesScan(t *testing.T) {
	for _, k := range []int{2, 3, 8, 32, 300, 4096} {
		rt := newRouter(pcgFor(3, streamRouting), Uneven, k)
		plain := rngFor(3, streamRouting)
		for n := range 200_000 {
			u := plain.Float64()
			want := k - 1
			for i, c := range rt.cdf {
				if u < c {
					want = i
					break
				}
			}
			if got := rt.pick(); got != want {
				t.Fatalf("k = %d, draw %d (%v): picked %d, the scan %d", k, n, u, got, want)
			}
		}
	}
}

// TestEvenPickMatchesIntN holds the even router to rand.Rand.IntN on the
// same stream, for powers of two (drawn on the generator itself) and not.
func TestEvenPickMatchesIntN(t *testing.T) {
	for _, k := range []int{1, 2, 3, 8, 32, 100, 4096} {
		rt := newRouter(pcgFor(5, streamRouting), Even, k)
		plain := rngFor(5, streamRouting)
		for n := range 100_000 {
			want := 0
			if k > 1 {
				want = plain.IntN(k)
			}
			if got := rt.pick(); got != want {
				t.Fatalf("k = %d, draw %d: picked %d, IntN %d", k, n, got, want)
			}
		}
	}
}
