// Package slotworth is the chance a store ranks permit's lease slots by,
// shared by the embedded store and Redis's scripts' mirror test. It is
// pure arithmetic: no clock, no I/O.
package slotworth

import "math"

// Of is what a store ranks lease slots by at a spare grant
// (Push.Rate): the chance that n or more requests reach a gateway in a sync
// interval, its arrivals being Poisson of mean rate/1000. Up to a mean of 30
// it is the Poisson tail; above, the normal approximation with continuity
// correction (erfc by Abramowitz and Stegun 7.1.26, within 1.5e-7), which
// needs no sum of hundreds of terms that underflow. Redis's scripts compute
// the same.
func Of(rate, n int) float64 {
	l := float64(rate) / 1000
	if n <= 0 {
		return 1
	}
	if l > 30 {
		return erfc((float64(n)-0.5-l)/math.Sqrt(2*l)) / 2
	}
	term, below := math.Exp(-l), 0.0
	for i := 0; i < n; i++ {
		below += term
		term *= l / float64(i+1)
	}
	return 1 - below
}

// Appended appends Of(rate, n) for n = 1..want to dst, each
// exactly the number Of returns, in one pass.
func Appended(dst []float64, rate, want int) []float64 {
	l := float64(rate) / 1000
	if l > 30 {
		for n := 1; n <= want; n++ {
			dst = append(dst, Of(rate, n))
		}
		return dst
	}
	term, below := math.Exp(-l), 0.0
	for i := 0; i < want; i++ {
		below += term
		term *= l / float64(i+1)
		dst = append(dst, 1-below)
	}
	return dst
}

// erfc is the complementary error function to 1.5e-7 (Abramowitz and
// Stegun 7.1.26), written out so that a Lua script can match it.
func erfc(x float64) float64 {
	if x < 0 {
		return 2 - erfc(-x)
	}
	t := 1 / (1 + 0.3275911*x)
	poly := t * (0.254829592 + t*(-0.284496736+t*(1.421413741+t*(-1.453152027+t*1.061405429))))
	return poly * math.Exp(-x*x)
}
