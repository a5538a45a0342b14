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
	// after the store lost the key: the count the gateway remembered,
	// which the view does not go under while anything it counted can still
	// be in the window (floorAt, when the store last told before the loss,
	// is at or after lo), until the store's own count reaches it (the
	// gateways' re-seeds have landed)
	floor   int
	floorAt int64
	at      int64   // when the store last told
	count   int     // the store's count when it last told
	exp     []int64 // stamps of count that leave the window soon, ascending
	expN    []int   // their counts (nil: 1 each)
	expOut  int     // how many of exp have left
	expGone int     // the requests they stand for
	// known's shortcut holds for a lo at or before until: no floor, and
	// no stamp of exp from expOut on before it (every change above
	// calls reckon)
	until int64
}

// reckon sets until after a change of the view.
func (v *storeView) reckon() {
	switch {
	case v.floor > 0:
		v.until = math.MinInt64
	case v.expOut < len(v.exp):
		v.until = v.exp[v.expOut]
	default:
		v.until = math.MaxInt64
	}
}

// pulled takes the store's count and soon-expiring stamps from a pull at
// now, copying what the pull only lends.
func (v *storeView) pulled(now int64, p *store.Pull) {
	v.at = now
	v.count = p.Count
	if p.Count >= v.floor {
		v.floor = 0
	}
	v.exp = append(v.exp[:0], p.Expiring...)
	v.expN = nil
	if p.ExpiringCounts != nil {
		v.expN = append(v.expN[:0:0], p.ExpiringCounts...)
	}
	v.expOut, v.expGone = 0, 0
	v.reckon()
}

// known is the store's count less what has aged out before lo, and no less
// than a floor remembered from before the store lost the key. Its common
// case, nothing new aged out and no floor, is small enough to inline.
func (v *storeView) known(lo int64) int {
	if lo <= v.until {
		return v.count - v.expGone
	}
	return v.knownSlow(lo)
}

// knownSlow is known when stamps may have aged out or a floor is kept.
func (v *storeView) knownSlow(lo int64) int {
	if v.floor > 0 {
		return v.floored(lo)
	}
	i, exp := v.expOut, v.exp
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
	v.reckon()
	return v.count - v.expGone
}

// floored is known with a floor.
func (v *storeView) floored(lo int64) int {
	floor := v.floor
	v.floor = 0
	k := v.known(lo)
	if v.floorAt >= lo {
		v.floor = floor
		k = max(k, floor)
	}
	v.reckon()
	return k
}

// rebase makes the view's count at lo equal count, a newer count from the
// store (an answer to a query at now), keeping the expiring stamps still
// ahead.
func (v *storeView) rebase(now, lo int64, count int) {
	floor := v.floor
	v.floor = 0
	v.known(lo)
	v.at = now
	v.count = count + v.expGone
	if count < floor {
		v.floor = floor
	}
	v.reckon()
}

// answered takes a central answer's count, newer than the view's, unless
// the query crossed the last pull (local.crossed) and the count is below
// the view's: the store applied it before that sync, and the pull is later.
func (v *storeView) answered(now, lo int64, count int, crossed bool) {
	if !crossed || count > v.known(lo) {
		v.rebase(now, lo, count)
	}
}

// withdrawn takes n back from the view's count: an admit the store
// counted in its last answer that the gateway is withdrawing.
func (v *storeView) withdrawn(n int) {
	v.count = max(v.count-n, v.expGone)
	v.reckon()
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

// forgot adjusts a view just told by a store that had lost the key: the
// count the gateway knew before, old, as of oldAt, is a floor until the
// store's count reaches it or all of it has left the window.
func (v *storeView) forgot(old int, oldAt int64) {
	if old > v.count-v.expGone {
		v.floor, v.floorAt = old, oldAt
	}
	v.reckon()
}

// takePull takes a sync's pull into a view and a local record (then
// settled): when the store forgot the key, what the view knew before stays
// a floor under the store's count. It reports whether the store had lost
// the key.
func takePull(now int64, p *store.Pull, v *storeView, l *local, w window.Spec) bool {
	forgot, old, oldAt := l.pulled(now, p), 0, v.at
	if forgot {
		old = v.known(w.Lo(now))
	}
	v.pulled(now, p)
	if forgot {
		v.forgot(old, oldAt)
	}
	l.settle()
	return forgot
}

// unfloored reports whether the store's count has no floor under it, or
// is at least the floor.
func (v *storeView) unfloored(lo int64) bool {
	return v.floor == 0 || v.floorAt < lo
}

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
