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
	register(Info{
		Name:    "permit",
		Summary: "lease slots where arrivals are likely, lent beyond L by a tolerance while the key is calm; ask the store's central check beyond them",
		Leases:  true,
		Spare:   true,
		New:     func(c Config) Gateway { return NewPermit(c, PermitTolerance) },
	})
}

// PermitTolerance is the registered permit's tolerance: the room beyond L,
// as a fraction of L, that its slots may take; a flood that starts at every
// gateway at once spends at most that much (the worst window's bound is
// (1 + t) × L).
const PermitTolerance = 0.1

// permitReserve is the part of permit's spare that syncs do not lend: room
// for the central checks of the gateways that hold no slot, which the lent
// slots would otherwise refuse while the window itself has room.
const permitReserve = 0.2

// permitMemory is how many windows of arrivals rank a permit gateway's asks
// (store.Push.Rate): one window is too noisy to tell a quiet gateway from
// a rare one.
const permitMemory = 5

// NewPermit builds permit for one gateway from a valid Config with
// tolerance t >= 0. permit is a lease that, at each sync, asks for one slot
// more than its arrivals need (ceil(r + 3 sqrt(r)), at least 1, r being its
// arrivals per sync interval over the last window), and for none once
// nothing has reached it for permitMemory windows. The store may grant
// beyond L by up to four fifths of floor(t × L) slots while the key is not
// contended (store.Push.Spare), a gateway's k-th slot going before any
// slot less likely to be used (store.Push.Rate). A request its slots
// cannot cover asks the store's central check, which admits while the
// window holds at most L and the window and the slots outstanding at most
// L + floor(t × L). docs/design.md states its bounds.
func NewPermit(c Config, t float64) Gateway {
	return NewPermitReserve(c, t, PermitReserve(permitSpare(c, t)))
}

// permitSpare is the room beyond L that permit's slots may take at
// tolerance t: floor(t × L).
func permitSpare(c Config, t float64) int { return int(math.Floor(t * float64(c.Limit))) }

// NewPermitReserve is NewPermit keeping reserve of the spare's
// floor(t × L) slots from the syncs' grants (clamped to [0, spare]): the
// room the central checks of gateways without a slot have while every
// slot is out. A smaller reserve places more slots and so saves round
// trips, and refuses more honest requests the window had room for
// (scripts/permit-frontier measures the trade).
func NewPermitReserve(c Config, t float64, reserve int) Gateway {
	l := newLease(c, true).(*lease)
	long := c
	long.Window.Size *= permitMemory
	l.long = newArrivals(long, HeadroomBuckets)
	l.spare = permitSpare(c, t)
	l.lend = l.spare - min(max(reserve, 0), l.spare)
	l.permit = true
	return l
}

// PermitReserve is the reserve NewPermit keeps of a spare: permitReserve
// of it, and at least one slot (none of no spare).
func PermitReserve(spare int) int {
	if spare <= 0 {
		return 0
	}
	return max(int(math.Ceil(permitReserve*float64(spare))), 1)
}

// lease admits only within the slots the store granted it. At each sync it
// hands back what it did not use and asks for ceil(1.5 r + 1) slots, r being
// its arrivals per sync interval averaged over the last window.
type lease struct {
	cfg      Config
	ask      bool     // lease-ask, permit
	permit   bool     // permit: asks by need, central checks past its slots
	spare    int      // permit: the room beyond L that slots may take (the central check's Spare)
	lend     int      // permit: the part of it syncs may grant (the push's Spare)
	long     arrivals // permit: arrivals over the last permitMemory windows, which rank its asks
	closed   int      // permit: the sync intervals closed, up to a window's
	wantMemo wantMemo // want's last answer
	// permit: the store's count as last told, aged by the stamps it said
	// leave the window soon (told: since a pull or an answer); the
	// requests refused alone on it since the last push, and those the
	// push in flight reports (store.Push.Refused)
	view            storeView
	told            bool
	refused, report int
	grant           int  // unused granted slots
	slot            bool // the last admit spent a slot
	local           local

	arr  arrivals // arrivals per sync interval over the last window
	cur  int      // arrivals in the open interval
	last int      // arrivals in the last closed interval

	wait bool // lease-ask: the store had no room; do not ask before the next sync
	// permit: refused for the slots outstanding; alone until then or the next sync
	waitUntil int64
	// syncing is true between SyncPush and SyncPull. A sync settles all
	// this gateway's slots at the store, so a grant made while one is in
	// flight would be forgotten there, and the push handed back every
	// slot held: meanwhile a request the slots cannot cover goes to the
	// store's central check instead, which logs it there. (A driver that
	// syncs atomically, like the simulator, never sees it.)
	syncing bool
	count   int // the store's count at the last pull
	// centralSince are the requests the central check admitted since the
	// last pull: part of the count the gateway knows, not yet in count.
	centralSince int
	// for the fallback: when the last pull came, the slots it said were
	// outstanding fleet-wide, and the grant it brought
	pullAt      int64
	outstanding int
	granted     int
	// after the store lost the key: the count the gateway knew before, and
	// when, which caps the slots it uses until the store's count reaches
	// it (the fleet's re-seeds have landed) or all of it has left the
	// window
	floor   int
	floorAt int64
}

func newLease(c Config, ask bool) Gateway {
	return &lease{cfg: c, ask: ask, arr: newArrivals(c, MaxLeaseBuckets), local: newLocal(c)}
}

// want is ceil(1.5 r + 1) for the closed intervals of the last window;
// permit's is one more than ceil(r + 3 sqrt(r)) (at least 1), and 0 when
// nothing arrived in permitMemory windows.
func (l *lease) want() int {
	m := &l.wantMemo
	if m.ok && m.sum == l.arr.sum && m.closed == l.closed && m.idle == (l.long.sum == 0) {
		return m.val
	}
	*m = wantMemo{ok: true, sum: l.arr.sum, closed: l.closed, idle: l.long.sum == 0, val: l.wantOf()}
	return m.val
}

// wantMemo is want's last answer and what it depends on: a sync of a quiet
// key asks what it asked before, and permit's ask costs a square root.
type wantMemo struct {
	ok          bool
	sum, closed int
	idle        bool
	val         int
}

// wantOf is want without the memo.
func (l *lease) wantOf() int {
	r := l.arr.mean()
	if !l.permit {
		return int(math.Ceil(1.5*r + 1))
	}
	if l.long.sum == 0 {
		return 0
	}
	if n := len(l.arr.intervals) * l.arr.span; l.closed < n {
		r = float64(l.arr.sum) / float64(max(l.closed, 1)) // a young key: the intervals seen so far
	}
	// No gateway can use more slots than L + spare, and a store ranks
	// every slot asked for (slotworth.Appended): a huge limit must not make
	// a sync's work or memory huge (past the cap, central checks decide).
	return min(max(int(math.Ceil(r+3*math.Sqrt(r))), 1)+1, l.cfg.Limit+l.spare, maxPermitAsk)
}

// maxPermitAsk bounds the slots a permit gateway asks for at once.
const maxPermitAsk = 1 << 14

func (l *lease) Decide(now int64, n int) (Verdict, store.Query) {
	l.cur += n
	l.slot = l.grant >= n
	if l.slot {
		l.grant -= n
		l.local.add(now, n)
		return Admit, store.Query{}
	}
	q := store.Query{Kind: store.QueryCentral, N: n, Spare: int32(l.spare)}
	if l.permit {
		if l.waiting(now) {
			return Reject, store.Query{} // the slots out fill L + spare: until the view changes
		}
		if l.told && !l.syncing {
			known := l.view.known(l.cfg.Window.Lo(now))
			if known+n > l.cfg.Limit && now <= l.view.at+l.horizon() { // as fullView
				l.refused += n
				return Reject, store.Query{}
			}
			q.TopUp = l.topUp(known)
		}
	}
	switch {
	case l.syncing || l.permit:
	case !l.ask || l.wait:
		return Reject, store.Query{}
	default:
		q = store.Query{Kind: store.QueryGrant, N: max(n-l.grant, l.want())}
	}
	l.local.query(&q, false)
	return Ask, q
}

// fullView reports whether permit's view of the store's window leaves no
// room for n: the central check would be refused for a full window, so the
// request is refused without asking. The view holds until the stamps the
// last pull said would leave run out, a horizon past the pull.
func (l *lease) fullView(now int64, n int) bool {
	if !l.told || l.syncing || now > l.view.at+l.horizon() {
		return false
	}
	return l.view.known(l.cfg.Window.Lo(now))+n > l.cfg.Limit
}

// topUp is the slots permit asks with a central check: while its view
// shows the window at most half full, what it would ask at a sync, so that
// a hot key whose arrivals outran its slots does not send the rest of the
// interval to the store; known is the view's count (Decide asks for none
// while a sync is in flight, which would forget them).
func (l *lease) topUp(known int) int16 {
	if 2*(known+1) > l.cfg.Limit {
		return 0
	}
	return int16(min(l.want(), math.MaxInt16))
}

// waiting reports whether permit still refuses alone after a central check
// refused for the slots outstanding: until its next pull, or the view's
// next stamp leaves the window (a stale wait is cleared).
func (l *lease) waiting(now int64) bool {
	if l.wait && now >= l.waitUntil {
		l.wait = false
	}
	return l.wait
}

// viewChanges is when the next stamp permit's view knows of leaves the
// window, and never when it knows of none.
func (l *lease) viewChanges(now int64) int64 {
	if t, ok := l.view.nextExpiry(); ok {
		return l.cfg.Window.Reset(now, t)
	}
	return math.MaxInt64
}

// horizon is how far past a pull permit's view knows which stamps leave.
func (l *lease) horizon() int64 { return HorizonSyncs * int64(l.cfg.Sync) }

func (l *lease) Resume(now int64, n int, q store.Query, a store.Answer) Verdict {
	if l.local.answered(now, q.Call, a.Gen) {
		l.floor, l.floorAt = l.count+l.centralSince, l.pullAt
	}
	if l.permit && q.Kind == store.QueryCentral {
		l.view.rebase(now, l.cfg.Window.Lo(now), a.Count)
		// refused with room in the window: the slots outstanding fill
		// L + spare, and only syncs (or admits leaving) make room
		l.wait = !a.Admit && a.Count+n <= l.cfg.Limit
		l.waitUntil = l.viewChanges(now)
	}
	if l.floor > 0 && l.floorAt < l.cfg.Window.Lo(now) {
		l.floor = 0
	}
	if q.Kind == store.QueryCentral {
		if !a.Admit {
			return Reject
		}
		if l.floor > 0 && l.floor+l.centralSince+n > l.cfg.Limit { // a store that lost the key admitted it
			l.local.abandon(now, q)
			return Reject
		}
		l.centralSince += n
		l.local.remember(now, n)
		l.grant += a.Granted // a top-up
		l.granted += a.Granted
		return Admit
	}
	l.grant += a.Granted
	if l.floor > 0 {
		l.grant = max(min(l.grant, l.cfg.Limit-l.floor), 0) // as at a pull
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
func (l *lease) Unadmit(now int64, n int, q store.Query) {
	switch {
	case l.slot:
		l.grant += n
		l.local.unadd(n)
	case q.Kind == store.QueryCentral:
		l.centralSince -= n
		l.local.abandon(now, q)
		if l.told {
			// The answer's count held this admit, which the next
			// contact withdraws: permit must not refuse alone on it.
			l.view.withdrawn(n)
		}
	default:
		l.local.unadd(n)
	}
}

// Fallback spends the slots held first, which the store counts already;
// past them, the remembering rule over the store's last count, the central
// admits since and every slot outstanding at the last pull (the other
// gateways may use theirs), with this gateway's admits beyond its slots as
// its own.
func (l *lease) Fallback(now int64, n int) Verdict {
	if l.slot = l.grant >= n; l.slot {
		l.grant -= n
		l.local.add(now, n)
		return Admit
	}
	known, own := l.remembered(now)
	if !remembered(&l.cfg, known, own, n) {
		return Reject
	}
	l.local.add(now, n)
	return Admit
}

// remembered is the fallback's view: the requests the store counts or has
// granted slots for, as last heard, and this gateway's admits beyond them.
func (l *lease) remembered(now int64) (known, own int) {
	known = l.centralSince + l.outstanding
	if l.pullAt >= l.cfg.Window.Lo(now) {
		known += l.count // the pull's admits still count
	}
	own = max(l.local.sinceSyncCount(now)-(l.granted-l.grant), 0)
	return known, own
}

// Abandon withdraws a central check (a grant's slots are settled by the
// next push) and falls back.
func (l *lease) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	return abandon(l, &l.local, now, n, q, fallback)
}

func (l *lease) SyncPush(now int64, p *store.Push) {
	l.last = l.cur
	l.arr.closeInterval(l.cur)
	if l.permit {
		l.long.closeInterval(l.cur)
		l.closed = min(l.closed+1, len(l.arr.intervals)*l.arr.span)
	}
	l.cur = 0
	ask := l.want()
	if l.ask && !l.permit && l.last == 0 {
		ask = 0
	}
	*p = store.Push{Gateway: l.cfg.Gateway, Ask: ask, Spare: l.lend}
	if l.permit {
		p.Rate = int(math.Round(1000 * l.long.mean()))
		p.Horizon, p.Refused, l.report = l.horizon(), l.refused, l.refused
	}
	l.local.push(p)
	l.grant = 0 // handed back by the push; a new grant comes with the pull
	l.syncing = true
}

func (l *lease) SyncPull(now int64, p *store.Pull) {
	// The pull's count holds the central admits that reached the store
	// before this sync's push; those after it wait for the next pull.
	if l.local.pulled(now, p) {
		l.floor, l.floorAt = l.count+l.centralSince, l.pullAt
	}
	l.grant, l.count, l.centralSince = p.Granted, p.Count, 0
	if l.floor > 0 {
		// a store that lost the key grants against a count without the
		// admits the fleet has not re-seeded yet: use no more slots than
		// the count remembered leaves
		if p.Count >= l.floor || l.floorAt < l.cfg.Window.Lo(now) {
			l.floor = 0
		} else {
			l.grant = max(min(l.grant, l.cfg.Limit-l.floor), 0)
		}
	}
	l.pullAt, l.outstanding, l.granted = now, p.Outstanding, p.Granted
	if l.permit {
		l.view.pulled(now, p)
		l.told = true
		l.refused -= l.report // reported; those since the push go with the next
		l.report = 0
	}
	l.local.settle()
	l.wait = false
	l.syncing = false
}

func (l *lease) Held() int { return l.grant }

// QuietSyncs counts the next syncs that would hand back and regrant the same
// slots. A sync is quiet when nothing arrived since the last one, nothing is
// to be pushed, and the slots held equal what the sync would ask for; the
// store then grants them again (admitted plus outstanding never exceeds L, so
// after the hand-back there is room for them). It stays quiet while the
// interval leaving the arrival ring had no arrivals, as the ask is unchanged.
// lease-ask asks for nothing after an idle interval, so once it holds nothing
// every later sync is quiet.
func (l *lease) QuietSyncs() int {
	if l.cur > 0 || l.local.unsynced() || l.local.waiting() {
		return 0
	}
	if l.permit {
		if l.grant == 0 && l.want() == 0 && l.refused == 0 {
			return math.MaxInt // nothing arrived in the window: it asks for nothing, and holds nothing
		}
		return 0 // a regrant depends on whether the key is contended
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
// permit rejects until its next sync once a central check was refused for
// the slots outstanding, and while its view is full: until a stamp of the
// view leaves the window, or the view's horizon passes.
func (l *lease) RefusesUntil(now int64) int64 {
	if l.permit {
		if l.grant >= 1 || l.syncing {
			return now
		}
		if l.waiting(now) {
			return l.waitUntil
		}
		if !l.fullView(now, 1) {
			return now
		}
		return min(l.view.at+l.horizon()+1, l.viewChanges(now))
	}
	if l.grant >= 1 || l.syncing || l.ask && !l.wait {
		return now
	}
	return math.MaxInt64
}

// Refused counts the arrivals, as Decide does, and permit's refusals.
func (l *lease) Refused(n int) {
	l.cur += n
	if l.permit && !l.wait {
		l.refused += n // on a full view, as Decide counts them
	}
}

// CountsRefusals is true: the arrivals size the next ask.
func (l *lease) CountsRefusals() bool { return true }

// QuietWhenFull: a store with no room grants back at most what a sync hands
// back, and exactly that to a gateway that asks for at least as much; the
// ask stays put while the intervals leaving the arrival ring are empty.
// lease-ask, whose grants and central checks change the store between
// syncs, says 0.
func (l *lease) QuietWhenFull() int {
	if l.ask || l.cur > 0 || l.local.unsynced() || l.local.waiting() || l.grant > l.want() {
		return 0
	}
	return l.arr.emptyAhead()
}

// Skip accounts for n quiet syncs: each closed an empty interval.
func (l *lease) Skip(n int) {
	if n <= 0 {
		return
	}
	l.arr.closeEmpty(n)
	if l.permit {
		l.long.closeEmpty(n)
		l.closed = min(l.closed+n, len(l.arr.intervals)*l.arr.span)
	}
	l.last = 0
	l.wait = false
	l.syncing = false
}

// PullsView is false for lease and lease-ask, whose state is their own;
// true for permit, which rejects on the view of its last pull.
func (l *lease) PullsView() bool { return l.permit }

// View returns the slots held for lease, for which more come only with a
// sync. lease-ask, which asks the store when they run out, sees what the
// store's last count left of the limit, less its own admits since, and at
// least the slots it holds; a central admit made while a sync was in flight
// and reaching the store after its push is missing from it until the next
// pull. With fallback set it is the slots held and what the remembering
// rule admits past them.
func (l *lease) View(now int64, fallback bool) (int, int64) {
	if fallback {
		known, own := l.remembered(now)
		return l.grant + rememberedLeft(&l.cfg, known, own), 0
	}
	if !l.ask {
		return l.grant, 0
	}
	return max(l.grant, l.cfg.Limit-l.count-l.centralSince-l.local.sinceSyncCount(now)), 0
}
