package sim

import (
	"fmt"
	"math/rand/v2"
)

// Routing says how a request picks its gateway.
type Routing uint8

const (
	// Even picks a gateway uniformly at random.
	Even Routing = iota
	// Uneven picks gateway i = 1..K with probability proportional to 1/i.
	Uneven
)

// String returns "even" or "uneven".
func (r Routing) String() string {
	if r == Uneven {
		return "uneven"
	}
	return "even"
}

// ParseRouting parses "even" or "uneven".
func ParseRouting(s string) (Routing, error) {
	switch s {
	case "even":
		return Even, nil
	case "uneven":
		return Uneven, nil
	}
	return 0, fmt.Errorf("routing %q: want even or uneven", s)
}

// router picks gateways from its own random stream.
type router struct {
	pcg    *rand.PCG
	rng    *rand.Rand // over pcg
	k      int
	uneven bool
	cdf    []float64 // Uneven: cumulative probabilities, last = 1
	// Uneven: from[b] is the first gateway whose cdf passes b/len(from),
	// where the scan for a draw in [b/len(from), (b+1)/len(from)) starts
	from [64]uint8
}

func newRouter(pcg *rand.PCG, r Routing, k int) *router {
	rt := &router{pcg: pcg, rng: rand.New(pcg), k: k, uneven: r == Uneven}
	if r == Uneven && k > 1 {
		var sum float64
		for i := 1; i <= k; i++ {
			sum += 1 / float64(i)
		}
		var acc float64
		for i := 1; i <= k; i++ {
			acc += 1 / float64(i) / sum
			rt.cdf = append(rt.cdf, acc)
		}
		rt.cdf[k-1] = 1
		for b := range rt.from {
			lo := float64(b) / float64(len(rt.from))
			i := 0
			for rt.cdf[i] <= lo {
				i++
			}
			rt.from[b] = uint8(min(i, 255))
		}
	}
	return rt
}

// setK makes the router pick among the first k gateways, as it would in a
// fleet of k.
func (r *router) setK(k int) {
	routing := Even
	if r.uneven {
		routing = Uneven
	}
	*r = *newRouter(r.pcg, routing, k)
}

func (r *router) pick() int {
	if r.cdf == nil {
		switch {
		case r.k == 1:
			return 0
		case r.k&(r.k-1) == 0 && !is32bit:
			// rand.Rand.IntN's own path for a power of two, on the
			// generator itself rather than through the Source interface
			return int(r.pcg.Uint64() & uint64(r.k-1))
		}
		return r.rng.IntN(r.k)
	}
	u := float64(r.pcg.Uint64()<<11>>11) / (1 << 53) // rand.Rand.Float64
	for i := int(r.from[int(u*float64(len(r.from)))]); i < len(r.cdf); i++ {
		if u < r.cdf[i] {
			return i
		}
	}
	return r.k - 1
}

// is32bit is true where rand.Rand draws bounded integers another way.
const is32bit = ^uint(0)>>32 == 0

// draws is how many numbers each pick draws from the stream: 0 or 1, or -1
// when that varies (rand.Rand.IntN may draw again for a k that is not a
// power of two).
func (r *router) draws() int {
	switch {
	case r.cdf != nil:
		return 1 // Float64
	case r.k == 1:
		return 0
	case r.k&(r.k-1) == 0:
		return 1 // a power of two: masked, never drawn again
	}
	return -1
}

// skip advances the router past n picks, whose gateways nobody needs; it
// must draw a fixed number per pick (draws() >= 0).
func (r *router) skip(n int) { jump(r.pcg, uint64(n*r.draws())) }
