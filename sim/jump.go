package sim

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// jump advances pcg by n draws in O(log n) steps: its state is a 128-bit
// linear congruential generator, s ← a·s + c (mod 2^128), and n steps of it
// are one step of a^n and c·(a^(n-1) + … + a + 1) (Brown, "Random number
// generation with arbitrary strides", 1994). The constants are
// math/rand/v2's; TestJumpMatchesDraws holds jump to n draws.
func jump(pcg *rand.PCG, n uint64) {
	if n < 16 {
		for range n {
			pcg.Uint64()
		}
		return
	}
	b, _ := pcg.MarshalBinary() // "pcg:", then the state, high word first
	s := u128{binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])}
	mul := u128{2549297995355413924, 4865540595714422341}
	inc := u128{6364136223846793005, 1442695040888963407}
	accMul, accInc := u128{0, 1}, u128{}
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			accMul = accMul.mul(mul)
			accInc = accInc.mul(mul).add(inc)
		}
		inc = mul.add(u128{0, 1}).mul(inc)
		mul = mul.mul(mul)
	}
	s = accMul.mul(s).add(accInc)
	pcg.Seed(s.hi, s.lo)
}

// u128 is an unsigned 128-bit integer; arithmetic wraps.
type u128 struct{ hi, lo uint64 }

func (x u128) mul(y u128) u128 {
	hi, lo := bits.Mul64(x.lo, y.lo)
	return u128{hi + x.hi*y.lo + x.lo*y.hi, lo}
}

func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, c)
	return u128{hi, lo}
}
