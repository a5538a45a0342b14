package slotworth

import (
	"math"
	"testing"
)

func TestAppendedMatchesOfExactly(t *testing.T) {
	for _, rate := range []int{0, 1, 37, 999, 1000, 4321, 29999, 30000, 30001, 60000, 250000} {
		ws := Appended(nil, rate, 80)
		for n := 1; n <= 80; n++ {
			if ws[n-1] != Of(rate, n) {
				t.Fatalf("rate %d slot %d: Appended %v, Of %v", rate, n, ws[n-1], Of(rate, n))
			}
		}
	}
}

func TestOfIsThePoissonTail(t *testing.T) {
	// Poisson of mean 1: P(X ≥ 1) = 1 − e⁻¹, P(X ≥ 2) = 1 − 2e⁻¹.
	for _, c := range []struct {
		rate, n int
		want    float64
	}{{1000, 0, 1}, {1000, 1, 1 - math.Exp(-1)}, {1000, 2, 1 - 2*math.Exp(-1)}, {0, 1, 0}} {
		if got := Of(c.rate, c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Of(%d, %d) = %v, want %v", c.rate, c.n, got, c.want)
		}
	}
	// Past a mean of 30 the normal approximation takes over: at 30 and just
	// past it the two agree to within two hundredths (the Poisson tail's skew,
	// about 1/(6√30) of the density, is what the normal one lacks), and the
	// tail falls.
	for n := 20; n <= 45; n++ {
		if a, b := Of(30000, n), Of(30001, n); math.Abs(a-b) > 0.02 {
			t.Errorf("slot %d: Poisson %v, normal %v", n, a, b)
		}
		if Of(60000, n+1) > Of(60000, n) {
			t.Errorf("slot %d is worth less than slot %d at a mean of 60", n, n+1)
		}
	}
}
