package design

import (
	"math"

	"github.com/fleetlimit/fleetlimit/store"
)

func init() {
	register(Info{
		Name:        "headroom",
		Summary:     "admit locally within what this gateway's arrivals need and its share of the room the store reported; ask the store beyond it, carrying the admits not yet pushed",
		FineBuckets: true,
		New:         func(c Config) Gateway { return NewHeadroom(c, HeadroomTolerance) },
	})
}

// HeadroomTolerance is the registered headroom's tolerance: the
// over-admission, as a fraction of L, that it accepts from a flood starting
// at every gateway at once, in exchange for sparing quiet gateways a round
// trip (see NewHeadroom).
const HeadroomTolerance = 0.1

// headroomNeed is how many times its mean arrivals per sync interval a
// gateway may admit locally in one interval (plus one).
const headroomNeed = 2

// headroom decides locally while the store's last word leaves room and goes
// to the store's central check when its budget is spent.
type headroom struct {
	cfg   Config
	spare bool // a gateway whose share of the room is less than one may still admit one
	view  storeView
	local local // own local admits: since the last sync, and for the fallback

	share  float64 // own share of the window's admits at the last pull
	floor  float64 // the share's floor
	budget int     // local admits allowed until the next pull
	used   int     // local admits since the last pull
	told   bool    // the store has told this gateway its count once

	arr  arrivals // own arrivals per sync interval over the last window
	cur  int      // own arrivals since the last pull, rejected ones too
	last int      // own arrivals in the last closed interval

	// derived from arr, share and last whenever they change (rates)
	mean    float64 // arr's mean arrivals per interval
	reserve float64 // half an interval of the other gateways' arrivals
	quiet   bool    // a quiet gateway: the tolerance's spare admit applies

	carry store.Push // the push a round trip carries
	spent int        // the budget the last Decide spent

	// syncing is true between SyncPush and SyncPull; answered, that a
	// round trip was answered meanwhile: its count is newer than the
	// pull's, which a driver that does not sync atomically (the live
	// limiter) hands over later.
	syncing, answered bool
}

// NewHeadroom builds headroom for one gateway from a valid Config with the
// given tolerance t >= 0. Each gateway's local budget for a sync interval is
// its share of the room its last pull reported, and no more than twice its
// mean arrivals per interval, plus one. A gateway whose share is less than
// one request may still admit one locally when the fleet, every gateway
// doing so at once, would pass the limit by at most t × L (K <= t × L):
// t trades a sudden flood's over-admission against quiet gateways' round
// trips.
func NewHeadroom(c Config, t float64) Gateway {
	k := float64(c.Gateways)
	h := &headroom{cfg: c, local: newLocal(c), share: 1 / k, floor: 1 / (2 * k), arr: newArrivals(c, HeadroomBuckets)}
	h.spare = k <= t*float64(c.Limit)
	h.rates()
	return h
}

// rates derives the mean arrivals, the reserve and quietness from the
// arrival ring, the share and the last interval, once per change rather
// than at every decision. Half an interval of the other gateways'
// arrivals, estimated from this gateway's by its share, is kept back: what
// they may admit between this gateway's pull and their own (pulls are
// staggered).
func (h *headroom) rates() {
	h.mean = h.arr.mean()
	h.reserve = h.mean * (1/h.share - 1) / 2
	h.quiet = h.spare && h.last <= 1 && headroomNeed*h.mean <= 1
}

// setBudget sizes the local budget when the store reports room left (at a
// pull or in an answer): what this gateway's arrivals need, within its share
// of the room.
func (h *headroom) setBudget(room int) { h.budget, h.used = h.budgetFor(room), 0 }

// budgetFor is the local budget when the store reports room left.
func (h *headroom) budgetFor(room int) int {
	if h.arr.sum == 0 {
		return 0
	}
	m := h.mean
	need := int(math.Ceil(m + headroomNeed*math.Sqrt(m)))
	if h.spare {
		need++
	}
	return min(need, h.capFor(room))
}

// capFor is the most this gateway may admit locally when room is left: its
// share of the room less a reserve, plus one for a quiet gateway when the
// fleet tolerates every gateway doing so.
func (h *headroom) capFor(room int) int {
	b := int(math.Floor(h.share * (float64(room) - h.reserve)))
	if room > 0 && h.quiet {
		b++
	}
	return max(b, 0)
}

func (h *headroom) Decide(now int64, n int) (Verdict, store.Query) {
	h.cur += n
	h.spent = 0
	known := h.view.known(h.cfg.Window.Lo(now))
	own := h.local.sinceSyncCount(now)
	if h.told && known+own+n > h.cfg.Limit {
		return Reject, store.Query{}
	}
	if !h.told && h.spare && h.used == 0 && n == 1 {
		h.used, h.spent = n, n // a key's first request: the tolerance's one free admit
		h.local.add(now, n)
		return Admit, store.Query{}
	}
	if h.told && h.used+n <= min(h.budget, h.capFor(h.cfg.Limit-known-own)) {
		h.used += n
		h.spent = n
		h.local.add(now, n)
		return Admit, store.Query{}
	}
	q := store.Query{Kind: store.QueryCentral, N: n}
	if h.local.unsynced() {
		h.carry = store.Push{Gateway: h.cfg.Gateway, WantOwn: true}
		h.local.pushAdmits(&h.carry)
		q.Carry = &h.carry
	}
	h.local.query(&q, true)
	return Ask, q
}

// RefusesUntil: once told the store's count, headroom rejects while its
// view and own admits fill the limit: until a stamp of the view or an own
// admit since the sync leaves the window.
func (h *headroom) RefusesUntil(now int64) int64 {
	known := h.view.known(h.cfg.Window.Lo(now))
	if !h.told || known+h.local.sinceSyncCount(now)+1 <= h.cfg.Limit {
		return now
	}
	return h.view.agesAt(h.cfg.Window, &h.local, now)
}

// Refused counts the arrivals, as Decide does.
func (h *headroom) Refused(n int) { h.cur += n }

// CountsRefusals is true: the arrivals size the budget.
func (h *headroom) CountsRefusals() bool { return true }

func (h *headroom) Resume(now int64, n int, q store.Query, a store.Answer) Verdict {
	lo := h.cfg.Window.Lo(now)
	forgot, old, oldAt := h.local.answered(now, q.Call, a.Gen), 0, h.view.at
	if forgot {
		old = h.view.known(lo)
	}
	if q.Carry != nil {
		h.local.settleCarry() // the store applied the carried push, admitted or not
	}
	h.answered = h.syncing
	h.view.rebase(now, lo, a.Count)
	if forgot {
		h.view.forgot(old, oldAt)
	}
	// The budget is renewed at pulls only: renewing it at every answer
	// too halves the busy key's round trips but lets floods through at
	// up to 1.14 x L (docs/design.md).
	if room := h.cfg.Limit - a.Count; !h.told || (2*room >= h.cfg.Limit && room >= 2*h.cfg.Gateways*h.budgetFor(room)) {
		h.setBudget(room)
	}
	h.told = true
	if !a.Admit {
		return Reject
	}
	if !h.view.unfloored(lo) && h.view.floor+n > h.cfg.Limit { // a store that lost the key admitted it
		h.local.abandon(now, q)
		return Reject
	}
	h.local.remember(now, n)
	return Admit
}

// Unadmit gives back the budget a local admit spent and forgets it, or
// withdraws a central admit at the next contact.
func (h *headroom) Unadmit(now int64, n int, q store.Query) {
	h.used -= h.spent
	h.spent = 0
	h.local.unadmit(now, n, q)
}

// Fallback is the remembering rule over the view and the admits since the
// last sync.
func (h *headroom) Fallback(now int64, n int) Verdict {
	h.spent = 0
	known, own := h.view.remembered(h.cfg.Window.Lo(now)), h.local.sinceSyncCount(now)
	if !remembered(&h.cfg, known, own, n) {
		return Reject
	}
	h.local.add(now, n)
	return Admit
}

// Abandon withdraws the central check and falls back; the admits the query
// carried stay to be pushed again.
func (h *headroom) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	return abandon(h, &h.local, now, n, q, fallback)
}

func (h *headroom) SyncPush(now int64, p *store.Push) {
	*p = store.Push{Gateway: h.cfg.Gateway, Horizon: HorizonSyncs * int64(h.cfg.Sync), WantOwn: true}
	h.local.push(p)
	h.syncing, h.answered = true, false
}

func (h *headroom) SyncPull(now int64, p *store.Pull) {
	lo := h.cfg.Window.Lo(now)
	forgot, oldAt := h.local.pulled(now, p), h.view.at
	newer := h.view.known(lo)
	h.view.pulled(now, p)
	switch {
	case forgot:
		h.view.forgot(newer, oldAt)
	case h.answered && newer > p.Count:
		h.view.rebase(now, lo, newer)
	}
	h.syncing, h.answered = false, false
	h.local.settle()
	if p.Count == 0 {
		h.share = 1 / float64(h.cfg.Gateways)
	} else {
		h.share = min(max(float64(p.Own)/float64(p.Count), h.floor), 1)
	}
	h.arr.closeInterval(h.cur)
	h.cur, h.last = 0, h.cur
	h.rates()
	h.told = true
	h.setBudget(h.cfg.Limit - h.view.known(lo))
}

func (h *headroom) Held() int { return 0 }

// QuietSyncs: with nothing arrived and no admits to push, a sync only
// refreshes the view (the last one before a decision is kept) and closes an
// empty interval, which Skip does.
func (h *headroom) QuietSyncs() int {
	if h.cur > 0 {
		return 0
	}
	return h.local.quietSyncs()
}

// Skip closes n empty intervals.
func (h *headroom) Skip(n int) {
	if n > 0 {
		h.arr.closeEmpty(n)
		h.last = 0
		h.rates()
	}
}

// PullsView is true: the view and the budget come from the last pull.
func (h *headroom) PullsView() bool { return true }

// View returns what the store's last word leaves, less this gateway's admits
// since; the driver learns when budget frees at the next sync.
func (h *headroom) View(now int64, fallback bool) (int, int64) {
	if fallback {
		return fallbackView(&h.cfg, &h.view, &h.local, now, h.view.remembered(h.cfg.Window.Lo(now)), h.local.sinceSyncCount(now))
	}
	known := h.view.known(h.cfg.Window.Lo(now))
	return max(h.cfg.Limit-known-h.local.sinceSyncCount(now), 0), 0
}
