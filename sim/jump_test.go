package sim

import "testing"

// TestJumpMatchesDraws holds a jump of n to n draws: the next numbers drawn
// are the same.
func TestJumpMatchesDraws(t *testing.T) {
	for _, n := range []uint64{0, 1, 15, 16, 17, 1000, 65537, 1 << 20} {
		a, b := pcgFor(7, streamRouting), pcgFor(7, streamRouting)
		for range n {
			a.Uint64()
		}
		jump(b, n)
		for i := range 4 {
			if x, y := a.Uint64(), b.Uint64(); x != y {
				t.Fatalf("n = %d, draw %d after: drawn %#x, jumped %#x", n, i, x, y)
			}
		}
	}
}
