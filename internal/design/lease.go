package design

import (
	"math"

	"github.com/fleetlimit/fleetlimit/store"
)

func init() {
	register(Info{
		Name:    "lease",
		Summary: "admit only within slots granted at each sync; exact, may strand budget",
		Leases:  true,
		New:     func(c Config) Gateway { return newLease(c, false) },
	})
	register(Info{
		Name:    "lease-ask",
		Summary: "lease that asks for nothing after an idle interval and goes to the store when empty",
		Leases:  true,
		New:     func(c Config) Gateway { return newLease(c, true) },
	})
}

// lease admits only within the slots the store granted it. At each sync it
// hands back what it did not use and asks for ceil(1.5 r + 1) slots, r being
// its arrivals per sync interval averaged over the last window. lease-ask
// (ask) asks for none after an idle interval, and past its slots asks the
// store for more with a round trip.
type lease struct {
	slots
	ask  bool // lease-ask
	wait bool // lease-ask: the store had no room; do not ask before the next sync
}

func newLease(c Config, ask bool) Gateway {
	return &lease{slots: newSlots(c), ask: ask}
}

// want is ceil(1.5 r + 1) for the closed intervals of the last window.
func (l *lease) want() int { return int(math.Ceil(1.5*l.arr.mean() + 1)) }

func (l *lease) Decide(now int64, n int) (Verdict, store.Query) {
	if l.spend(now, n) {
		return Admit, store.Query{}
	}
	q := store.Query{Kind: store.QueryCentral, N: n}
	switch {
	case l.syncing:
	case !l.ask || l.wait:
		return Reject, store.Query{}
	default:
		q = store.Query{Kind: store.QueryGrant, N: max(n-l.grant, l.want())}
	}
	l.local.query(&q, false)
	return Ask, q
}

func (l *lease) Resume(now int64, n int, q store.Query, a store.Answer) Verdict {
	l.answered(now, q, a)
	if q.Kind == store.QueryCentral {
		return l.central(now, n, q, a)
	}
	l.grant += a.Granted
	if l.floor > 0 {
		l.grant = l.capped(l.grant) // as at a pull
	}
	if l.grant < n {
		l.wait = true
		return Reject
	}
	l.grant -= n
	l.slot = true
	l.local.add(now, n)
	return Admit
}

// Unadmit returns a slot, forgets a fallback's admit, or withdraws a
// central admit at the next contact.
func (l *lease) Unadmit(now int64, n int, q store.Query) { l.unadmit(now, n, q) }

// Abandon withdraws a central check (a grant's slots are settled by the
// next push) and falls back.
func (l *lease) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	return abandon(l, &l.local, now, n, q, fallback)
}

func (l *lease) SyncPush(now int64, p *store.Push) {
	l.closeInterval()
	ask := l.want()
	if l.ask && l.last == 0 {
		ask = 0
	}
	l.push(p, ask, 0)
}

func (l *lease) SyncPull(now int64, p *store.Pull) {
	l.pulled(now, p)
	l.local.settle()
	l.wait = false
	l.syncing = false
}

// QuietSyncs counts the next syncs that would hand back and regrant the same
// slots. A sync is quiet when nothing arrived since the last one, nothing is
// to be pushed, and the slots held equal what the sync would ask for; the
// store then grants them again (admitted plus outstanding never exceeds L, so
// after the hand-back there is room for them). It stays quiet while the
// interval leaving the arrival ring had no arrivals, as the ask is unchanged.
// lease-ask asks for nothing after an idle interval, so once it holds nothing
// every later sync is quiet.
func (l *lease) QuietSyncs() int {
	if !l.quiet() {
		return 0
	}
	if l.ask {
		if l.grant == 0 {
			return math.MaxInt
		}
		return 0
	}
	if l.grant != l.want() {
		return 0
	}
	return l.arr.emptyAhead()
}

// RefusesUntil: with no slot left, lease rejects until its next sync, and
// so does lease-ask once the store refused it (wait) or while a sync is out
// (it would ask the central check).
func (l *lease) RefusesUntil(now int64) int64 {
	if l.grant >= 1 || l.syncing || l.ask && !l.wait {
		return now
	}
	return math.MaxInt64
}

// Refused counts the arrivals, as Decide does.
func (l *lease) Refused(n int) { l.cur += n }

// CountsRefusals is true: the arrivals size the next ask.
func (l *lease) CountsRefusals() bool { return true }

// QuietWhenFull: a store with no room grants back at most what a sync hands
// back, and exactly that to a gateway that asks for at least as much; the
// ask stays put while the intervals leaving the arrival ring are empty.
// lease-ask, whose grants and central checks change the store between
// syncs, says 0.
func (l *lease) QuietWhenFull() int {
	if l.ask || !l.quiet() || l.grant > l.want() {
		return 0
	}
	return l.arr.emptyAhead()
}

// Skip accounts for n quiet syncs: each closed an empty interval.
func (l *lease) Skip(n int) {
	if n <= 0 {
		return
	}
	l.skip(n)
	l.wait = false
}

// PullsView is false: lease's state is its own.
func (l *lease) PullsView() bool { return false }

// View returns the slots held for lease, for which more come only with a
// sync. lease-ask, which asks the store when they run out, sees what the
// store's last count left of the limit, less its own admits since, and at
// least the slots it holds. With fallback set it is the slots held and
// what the remembering rule admits past them.
func (l *lease) View(now int64, fallback bool) (int, int64) {
	switch {
	case fallback:
		return l.heldView(now)
	case l.ask:
		return l.askedView(now)
	}
	return l.grant, 0
}
