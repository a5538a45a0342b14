package design

import (
	"math"

	"github.com/fleetlimit/fleetlimit/store"
)

func init() {
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
// tolerance t >= 0. permit holds slots as a lease does; at each sync it asks for one slot
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
	long := c
	long.Window.Size *= permitMemory
	p := &permit{slots: newSlots(c), long: newArrivals(long, HeadroomBuckets), spare: permitSpare(c, t)}
	p.lend = p.spare - min(max(reserve, 0), p.spare)
	return p
}

// PermitReserve is the reserve NewPermit keeps of a spare: permitReserve
// of it, and at least one slot (none of no spare).
func PermitReserve(spare int) int {
	if spare <= 0 {
		return 0
	}
	return max(int(math.Ceil(permitReserve*float64(spare))), 1)
}

// permit admits within the slots the store granted it at its last sync,
// and past them asks the store's central check, which admits while the
// window holds at most L (and grants a top-up of slots while the window is
// at most half full). Between syncs it keeps a view of the store's window,
// as last told, on which it refuses alone what the store would refuse.
type permit struct {
	slots
	spare    int      // the room beyond L that slots may take (the central check's Spare)
	lend     int      // the part of it syncs may grant (the push's Spare)
	long     arrivals // arrivals over the last permitMemory windows, which rank its asks
	closed   int      // the sync intervals closed, up to a window's
	wantMemo wantMemo // want's last answer
	// the store's count as last told, aged by the stamps it said leave
	// the window soon (told: since a pull or an answer); the requests
	// refused alone on it since the last push, and those the push in
	// flight reports (store.Push.Refused)
	view            storeView
	told            bool
	refused, report int
	// refused for the slots outstanding: alone until waitUntil or the next sync
	wait      bool
	waitUntil int64
}

// want is one more than ceil(r + 3 sqrt(r)) (at least 1) for the closed
// intervals of the last window, and 0 when nothing arrived in
// permitMemory windows.
func (p *permit) want() int {
	m := &p.wantMemo
	if m.ok && m.sum == p.arr.sum && m.closed == p.closed && m.idle == (p.long.sum == 0) {
		return m.val
	}
	*m = wantMemo{ok: true, sum: p.arr.sum, closed: p.closed, idle: p.long.sum == 0, val: p.wantOf()}
	return m.val
}

// wantMemo is want's last answer and what it depends on: a sync of a quiet
// key asks what it asked before, and the ask costs a square root.
type wantMemo struct {
	ok          bool
	sum, closed int
	idle        bool
	val         int
}

// wantOf is want without the memo.
func (p *permit) wantOf() int {
	if p.long.sum == 0 {
		return 0
	}
	r := p.arr.mean()
	if n := len(p.arr.intervals) * p.arr.span; p.closed < n {
		r = float64(p.arr.sum) / float64(max(p.closed, 1)) // a young key: the intervals seen so far
	}
	// No gateway can use more slots than L + spare, and a store ranks
	// every slot asked for (slotworth.Appended): a huge limit must not make
	// a sync's work or memory huge (past the cap, central checks decide).
	return min(max(int(math.Ceil(r+3*math.Sqrt(r))), 1)+1, p.cfg.Limit+p.spare, maxPermitAsk)
}

// maxPermitAsk bounds the slots a permit gateway asks for at once.
const maxPermitAsk = 1 << 14

func (p *permit) Decide(now int64, n int) (Verdict, store.Query) {
	if p.spend(now, n) {
		return Admit, store.Query{}
	}
	if p.waiting(now) {
		return Reject, store.Query{} // the slots out fill L + spare: until the view changes
	}
	q := store.Query{Kind: store.QueryCentral, N: n, Spare: int32(p.spare)}
	if p.told && !p.syncing {
		known := p.view.known(p.cfg.Window.Lo(now))
		if known+n > p.cfg.Limit && now <= p.view.at+p.horizon() { // as fullView
			p.refused += n
			return Reject, store.Query{}
		}
		q.TopUp = p.topUp(known)
	}
	p.local.query(&q, false)
	return Ask, q
}

// fullView reports whether permit's view of the store's window leaves no
// room for n: the central check would be refused for a full window, so the
// request is refused without asking. The view holds until the stamps the
// last pull said would leave run out, a horizon past the pulp.
func (p *permit) fullView(now int64, n int) bool {
	if !p.told || p.syncing || now > p.view.at+p.horizon() {
		return false
	}
	return p.view.known(p.cfg.Window.Lo(now))+n > p.cfg.Limit
}

// topUp is the slots permit asks with a central check: while its view
// shows the window at most half full, what it would ask at a sync, so that
// a hot key whose arrivals outran its slots does not send the rest of the
// interval to the store; known is the view's count (Decide asks for none
// while a sync is in flight, which would forget them).
func (p *permit) topUp(known int) int16 {
	if 2*(known+1) > p.cfg.Limit {
		return 0
	}
	return int16(min(p.want(), math.MaxInt16))
}

// waiting reports whether permit still refuses alone after a central check
// refused for the slots outstanding: until its next pull, or the view's
// next stamp leaves the window (a stale wait is cleared).
func (p *permit) waiting(now int64) bool {
	if p.wait && now >= p.waitUntil {
		p.wait = false
	}
	return p.wait
}

// viewChanges is when the next stamp permit's view knows of leaves the
// window, and never when it knows of none.
func (p *permit) viewChanges(now int64) int64 {
	if t, ok := p.view.nextExpiry(); ok {
		return p.cfg.Window.Reset(now, t)
	}
	return math.MaxInt64
}

// horizon is how far past a pull permit's view knows which stamps leave.
func (p *permit) horizon() int64 { return HorizonSyncs * int64(p.cfg.Sync) }

func (p *permit) Resume(now int64, n int, q store.Query, a store.Answer) Verdict {
	p.answered(now, q, a)
	p.view.answered(now, p.cfg.Window.Lo(now), a.Count, !p.syncing && p.local.crossed(q))
	// refused with room in the window: the slots outstanding fill
	// L + spare, and only syncs (or admits leaving) make room
	p.wait = !a.Admit && a.Count+n <= p.cfg.Limit
	p.waitUntil = p.viewChanges(now)
	return p.central(now, n, q, a)
}

// Unadmit returns a slot, forgets a fallback's admit, or withdraws a
// central admit at the next contact.
func (p *permit) Unadmit(now int64, n int, q store.Query) {
	if p.unadmit(now, n, q) && p.told {
		// The answer's count held this admit, which the next contact
		// withdraws: permit must not refuse alone on it.
		p.view.withdrawn(n)
	}
}

// Abandon withdraws a central check and falls back.
func (p *permit) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	return abandon(p, &p.local, now, n, q, fallback)
}

func (p *permit) SyncPush(now int64, push *store.Push) {
	p.long.closeInterval(p.cur)
	p.closed = min(p.closed+1, len(p.arr.intervals)*p.arr.span)
	p.closeInterval()
	p.push(push, p.want(), p.lend)
	push.Rate = int(math.Round(1000 * p.long.mean()))
	push.Horizon, push.Refused, p.report = p.horizon(), p.refused, p.refused
}

func (p *permit) SyncPull(now int64, pull *store.Pull) {
	seen := p.seen
	forgot := p.pulled(now, pull)
	p.view.pulled(now, pull)
	if !forgot && seen > pull.Count {
		p.view.rebase(now, p.cfg.Window.Lo(now), seen) // a central answer after the sync was the later
	}
	p.told = true
	p.refused -= p.report // reported; those since the push go with the next
	p.report = 0
	p.local.settle()
	p.wait = false
	p.syncing = false
}

// QuietSyncs is math.MaxInt once nothing arrived in permitMemory windows
// and nothing is held, pushed or refused (it asks for nothing, and holds
// nothing), and 0 otherwise: a regrant depends on whether the key is
// contended.
func (p *permit) QuietSyncs() int {
	if p.quiet() && p.grant == 0 && p.want() == 0 && p.refused == 0 {
		return math.MaxInt
	}
	return 0
}

// RefusesUntil: permit rejects until its next sync once a central check was
// refused for the slots outstanding, and while its view is full: until a
// stamp of the view leaves the window, or the view's horizon passes.
func (p *permit) RefusesUntil(now int64) int64 {
	if p.grant >= 1 || p.syncing {
		return now
	}
	if p.waiting(now) {
		return p.waitUntil
	}
	if !p.fullView(now, 1) {
		return now
	}
	return min(p.view.at+p.horizon()+1, p.viewChanges(now))
}

// Refused counts the arrivals, as Decide does, and the refusals on a full
// view.
func (p *permit) Refused(n int) {
	p.cur += n
	if !p.wait {
		p.refused += n
	}
}

// CountsRefusals is true: the arrivals size the next ask.
func (p *permit) CountsRefusals() bool { return true }

// Skip accounts for n quiet syncs: each closed an empty interval.
func (p *permit) Skip(n int) {
	if n <= 0 {
		return
	}
	p.skip(n)
	p.long.closeEmpty(n)
	p.closed = min(p.closed+n, len(p.arr.intervals)*p.arr.span)
	p.wait = false
}

// PullsView is true: permit rejects on the view of its last pull.
func (p *permit) PullsView() bool { return true }

// View is what the store's last count left of the limit, less its own
// admits since, and at least the slots it holds; with fallback set, the
// slots held and what the remembering rule admits past them.
func (p *permit) View(now int64, fallback bool) (int, int64) {
	if fallback {
		return p.heldView(now)
	}
	return p.askedView(now)
}
