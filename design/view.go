package design

import (
	"math"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// storeView is a gateway's picture of the store's count for one key: the
// count of the last pull (or answer), aged between pulls by the stamps the
// store said would leave the window soon.
type storeView struct {
	at      int64   // when the store last told
	count   int     // the store's count when it last told
	exp     []int64 // stamps of count that leave the window soon, ascending
	expN    []int   // their counts (nil: 1 each)
	expOut  int     // how many of exp have left
	expGone int     // the requests they stand for
}

// pulled takes the store's count and soon-expiring stamps from a pull at
// now, copying what the pull only lends.
func (v *storeView) pulled(now int64, p *store.Pull) {
	v.at = now
	v.count = p.Count
	v.exp = append(v.exp[:0], p.Expiring...)
	v.expN = nil
	if p.ExpiringCounts != nil {
		v.expN = append(v.expN[:0:0], p.ExpiringCounts...)
	}
	v.expOut, v.expGone = 0, 0
}

// known is the store's count less what has aged out before lo.
func (v *storeView) known(lo int64) int {
	i, exp := v.expOut, v.exp
	if i == len(exp) || exp[i] >= lo {
		return v.count - v.expGone
	}
	for i < len(exp) && exp[i] < lo { // in locals: a gateway passes about K stamps between decisions
		i++
	}
	if v.expN == nil {
		v.expGone += i - v.expOut
	} else {
		for _, n := range v.expN[v.expOut:i] {
			v.expGone += n
		}
	}
	v.expOut = i
	return v.count - v.expGone
}

// rebase makes the view's count at lo equal count, a newer count from the
// store (an answer to a query at now), keeping the expiring stamps still
// ahead.
func (v *storeView) rebase(now, lo int64, count int) {
	v.known(lo)
	v.at = now
	v.count = count + v.expGone
}

// remembered is known for the fallback: once the whole window has passed
// since the store last told (its time is before lo), everything it counted
// has left.
func (v *storeView) remembered(lo int64) int {
	if v.at < lo {
		return 0
	}
	return v.known(lo)
}

// forgot adjusts a view just pulled from a store that had lost the key:
// the count the gateway knew before, old, still holds, and the pull's
// count adds what was pushed since the loss, until the next pull counts
// the re-seeded admits.
func (v *storeView) forgot(old int) { v.count += old }

// agesAt is the first instant after now at which a stamp of the view (aged
// to now) or an admit of l since its last sync (when that is the own count
// a rule adds to the view) leaves the window: until then, neither figure
// falls. math.MaxInt64 when it knows of none.
func (v *storeView) agesAt(spec window.Spec, l *local, now int64) int64 {
	u := int64(math.MaxInt64)
	if t, ok := v.nextExpiry(); ok {
		u = spec.Reset(now, t)
	}
	if i := l.sinceSync(now); i < len(l.stamps) {
		u = min(u, spec.Reset(now, l.stamps[i]))
	}
	return u
}

// nextExpiry returns the oldest known stamp still counted, and false when
// none is known.
func (v *storeView) nextExpiry() (int64, bool) {
	if v.expOut < len(v.exp) {
		return v.exp[v.expOut], true
	}
	return 0, false
}
