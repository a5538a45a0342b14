package design

import (
	"math"

	"github.com/fleetlimit/fleetlimit/store"
)

// The fallback every design shares while its driver cannot reach the store
// (Gateway.Fallback) remembers: it starts from the count the store last
// reported, aged by the stamps the store said would leave the window (and
// taken as empty once a whole window has passed since: everything it
// counted has left), and from this gateway's admits the store has not
// acknowledged since. It admits a request of cost n while
//
//	known + K × (own + n − 1) < L,  that is  own + n ≤ ceil((L − known) / K):
//
// the room the gateway last saw, shared by every gateway of the fleet, as
// extrapolate does between syncs. If every gateway's view were the
// store's, the fleet could admit no more than L plus the rounding, K − 1
// at most; what a fleet can over-admit during an outage is the admits its
// gateways had not heard of when the store went away, divided by K
// (docs/design.md). After a window without the store it is the local
// quota, ceil(L/K) a gateway.

// remembered is the fallback's rule for a view of known requests at the
// store and own admits since.
func remembered(c *Config, known, own, n int) bool {
	return known+c.Gateways*(own+n-1) < c.Limit
}

// rememberedLeft is what remembered still admits.
func rememberedLeft(c *Config, known, own int) int {
	left := c.Limit - known
	if left <= 0 {
		return 0
	}
	return max((left+c.Gateways-1)/c.Gateways-own, 0)
}

// abandon is Gateway.Abandon for a design whose record is l and whose
// fallback is g's.
func abandon(g Gateway, l *local, now int64, n int, q store.Query, fallback bool) Verdict {
	l.abandon(now, q)
	if !fallback {
		return Reject
	}
	return g.Fallback(now, n)
}

// fallbackView is Gateway.View's answer for the fallback of a design whose
// view of the store is v and whose record is l: what remembered still
// admits, and the first instant a stamp of the view or an own admit since
// the last sync leaves the window (0 when it knows of none).
func fallbackView(c *Config, v *storeView, l *local, now int64, known, own int) (int, int64) {
	left := rememberedLeft(c, known, own)
	if u := v.agesAt(c.Window, l, now); u != math.MaxInt64 {
		return left, u
	}
	return left, 0
}
