package design

import (
	"math"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// local is a gateway's one record of its own admits for one key. It serves
// two purposes with one entry per admit:
//
//   - the sync: the admits not yet acknowledged by the store, which SyncPush
//     hands out and SyncPull settles (admits made while a sync is in flight
//     are pushed at the next one);
//   - the local quota, the rule of split and of every design's fallback while
//     the store cannot be reached: own admits in the window fewer than L/K,
//     i.e. at most ceil(L/K). For it the record keeps acknowledged admits
//     while they are in the window, but never more than the quota of them:
//     past that the exact number no longer matters to the rule.
//
// Times never go backwards between calls.
type local struct {
	spec  window.Spec
	quota int // ceil(L/K)

	stamps []int64 // ascending; stamps[:lo] are forgotten
	counts []int   // counts[i] is the requests stamps[i] stands for
	cum    []int64 // cum[i] is base plus the sum of counts[:i+1]
	base   int64   // the sum of the counts of the entries compacted away
	heavy  int     // entries since the last compaction whose count is above 1: Push.Counts is needed
	lo     int
	win    int // stamps[:win] have left the window (win may lag lo)
	acked  int // stamps[:acked] are in the store
	pushed int // stamps[acked:pushed] are in flight
	// syncTo is how far the last sync's push went: its pull acknowledges
	// that much, and not what a query carried since (a carry whose query
	// was abandoned may not be at the store: the next sync pushes it
	// again, under the same numbers)
	syncTo int
	seq    uint64 // admits the store has acknowledged, for Push.Seq
	epoch  uint64 // Push.Epoch

	// with Config.Mend, queries whose answers never came: the last query
	// ID handed out, the call a query points to, and the withdrawals of
	// abandoned central checks not yet acknowledged (ascending by ID;
	// wdUpTo is the last the last push sent)
	mend   bool
	nextID uint64
	call   store.Call
	wd     []store.Withdrawal
	wdUpTo uint64
	// pullID is nextID when the last pull came: a query of an ID up to
	// it was in flight across that pull (see crossed)
	pullID uint64

	// the store's life of the key when it last answered, and when (heard:
	// it has answered); forgot counts the times it was found to have
	// forgotten the key
	gen    uint64
	genAt  int64
	heard  bool
	forgot int

	// with Config.Mend: this gateway's acknowledged admits, and the
	// re-seed to push after the store forgot them
	hist         *history
	reseed       []int64
	reseedN      []int
	reseedID     uint64
	reseedPushed bool
}

func newLocal(c Config) local {
	l := local{spec: c.Window, quota: (c.Limit + c.Gateways - 1) / c.Gateways, epoch: c.Epoch} // own < L/K  <=>  own+1 <= ceil(L/K)
	if c.Mend {
		l.mend, l.hist = true, newHistory(c.Window)
	}
	return l
}

// add records a request of cost n admitted at now, to be pushed at the next
// sync: one entry, whatever n, merged into the last one when that has the
// same time and is not pushed yet. With counters the time is the stamp of
// now's bucket, so entries are at most one a bucket and a sync.
func (l *local) add(now int64, n int) {
	now = l.spec.Stamp(now)
	last := len(l.stamps) - 1
	if last >= l.pushed && l.stamps[last] == now {
		if l.counts[last] == 1 {
			l.heavy++
		}
		l.counts[last] += n
		l.cum[last] += int64(n)
		return
	}
	c := l.base + int64(n)
	if last >= 0 {
		c = l.cum[last] + int64(n)
	}
	if n > 1 {
		l.heavy++
	}
	l.stamps, l.counts, l.cum = append(l.stamps, now), append(l.counts, n), append(l.cum, c)
}

// unadd takes back the last add of a request of cost n, which nothing has
// pushed since.
func (l *local) unadd(n int) {
	last := len(l.stamps) - 1
	if l.counts[last] == n { // the add made the entry
		if n > 1 {
			l.heavy--
		}
		l.stamps, l.counts, l.cum = l.stamps[:last], l.counts[:last], l.cum[:last]
		return
	}
	l.counts[last] -= n
	l.cum[last] -= int64(n)
	if l.counts[last] == 1 {
		l.heavy--
	}
}

// unadmit is Gateway.Unadmit for a design whose record is l: a query's
// central admit is withdrawn (with Mend), a local admit forgotten.
func (l *local) unadmit(now int64, n int, q store.Query) {
	if q.Kind == store.QueryCentral {
		l.abandon(now, q)
		return
	}
	l.unadd(n)
}

// units is the requests that entries [i, len) stand for.
func (l *local) units(i int) int {
	if i >= len(l.stamps) {
		return 0
	}
	u := l.cum[len(l.cum)-1] - l.base
	if i > 0 {
		u = l.cum[len(l.cum)-1] - l.cum[i-1]
	}
	return int(u)
}

// push fills p, for a sync, with the admits to push, numbered, and the
// pending withdrawals and re-seed (a Repair of its own, as a push in
// flight may still be read when the next is made).
func (l *local) push(p *store.Push) {
	l.pushAdmits(p)
	l.syncTo = l.pushed
	if !l.waiting() {
		return
	}
	p.Repair = &store.Repair{Withdraw: l.wd}
	if len(l.wd) > 0 {
		l.wdUpTo = l.wd[len(l.wd)-1].ID
	}
	if len(l.reseed) > 0 {
		p.Repair.Reseed, p.Repair.ReseedCounts, p.Repair.ReseedID = l.reseed, l.reseedN, l.reseedID
		l.reseedPushed = true
	}
}

// pushAdmits fills p with the admits to push, numbered: a sync's or a
// query's carry.
func (l *local) pushAdmits(p *store.Push) {
	l.pushed = len(l.stamps)
	p.Admits, p.Seq, p.Epoch = l.stamps[l.acked:l.pushed], l.seq+1, l.epoch
	p.Counts = nil
	if l.heavy > 0 {
		p.Counts = l.counts[l.acked:l.pushed]
	}
}

// query books q, a query about to be sent: in Pull.Own when own, and
// with Config.Mend under a name for a later withdrawal, with the pending
// withdrawals (the call is the record's until the next query).
func (l *local) query(q *store.Query, own bool) {
	if !l.mend && !own {
		return
	}
	l.call = store.Call{Own: own}
	if l.mend {
		l.nextID++
		l.call.ID, l.call.Epoch, l.call.Withdraw = l.nextID, l.epoch, l.wd
	}
	q.Call = &l.call
}

// crossed reports whether q, answered now, was sent before the last pull
// came: a live driver sends a central check and a sync on different
// connections, so the store may have applied q before that sync (the
// pull's count holds its admit) or after (it does not). Only a query with
// Config.Mend's ID can tell; the simulator syncs between decisions and
// sends none.
func (l *local) crossed(q store.Query) bool {
	return q.Call != nil && q.Call.ID != 0 && q.Call.ID <= l.pullID
}

// abandon records that q's answer will never come: a central check the
// store may have logged must be withdrawn.
func (l *local) abandon(now int64, q store.Query) {
	if c := q.Call; c != nil && q.Kind == store.QueryCentral && c.ID > 0 {
		l.wd = append(l.wd, store.Withdrawal{ID: c.ID, At: now, N: q.N})
	}
}

// answered takes the store's answer to a query at now, whose call (if
// any) was c and whose answer said the key's life is gen: the withdrawals
// the query carried are done, and the key's life is checked. It reports
// whether the store forgot the key.
func (l *local) answered(now int64, c *store.Call, gen uint64) bool {
	if c != nil && len(c.Withdraw) > 0 {
		l.ackWithdrawals(c.Withdraw[len(c.Withdraw)-1].ID)
	}
	return l.contact(now, gen)
}

// pulled takes a sync's pull, before settle: the withdrawals and re-seed
// the push sent are done, and the key's life is checked. It reports
// whether the store forgot the key.
func (l *local) pulled(now int64, p *store.Pull) bool {
	l.ackWithdrawals(l.wdUpTo)
	l.pullID = l.nextID
	if l.reseedPushed {
		l.reseed, l.reseedN, l.reseedPushed = nil, nil, false
	}
	return l.contact(now, p.Gen)
}

// ackWithdrawals drops the withdrawals up to ID upTo, which the store has
// applied. It never writes the slice a push in flight may still be reading.
func (l *local) ackWithdrawals(upTo uint64) {
	i := 0
	for i < len(l.wd) && l.wd[i].ID <= upTo {
		i++
	}
	if l.wd = l.wd[i:]; len(l.wd) == 0 {
		l.wd = nil
	}
}

// contact checks the key's life gen that the store reported at now
// against the one it reported last: a new life less than a window after
// the last answer means the store lost what it held (a store keeps a key
// for longer than a window after any call), and the admits this gateway
// had pushed are re-seeded from its history, if it keeps one.
func (l *local) contact(now int64, gen uint64) bool {
	if l.sameLife(now, gen) {
		return false
	}
	return l.newLife(now, gen)
}

// sameLife is contact's common case: it reports whether gen is the life
// the store reported last (and then takes it as heard at now); when not,
// nothing changed, and contact must follow.
func (l *local) sameLife(now int64, gen uint64) bool {
	if l.heard && gen == l.gen {
		l.genAt = now
		return true
	}
	return false
}

// newLife is contact when the store reports another life than the last.
func (l *local) newLife(now int64, gen uint64) bool {
	forgot := l.heard && l.spec.Lo(now) <= l.genAt
	l.gen, l.genAt, l.heard = gen, now, true
	if !forgot {
		return false
	}
	l.forgot++
	if l.hist != nil {
		l.reseed, l.reseedN = l.hist.snapshot(now)
		l.reseedID++
		l.reseedPushed = false
	}
	return true
}

// remember adds n admits at now that the store acknowledged otherwise than
// by a push (a central check) to the history.
func (l *local) remember(now int64, n int) {
	if l.hist != nil {
		l.hist.add(l.spec.Stamp(now), n)
	}
}

// waiting reports whether the next sync has something to tell the store
// besides admits: withdrawals or a re-seed.
func (l *local) waiting() bool { return len(l.wd) > 0 || len(l.reseed) > 0 }

// settle marks the admits of the last sync's push as acknowledged,
// forgetting the acknowledged ones the quota no longer needs: it keeps the
// newest of them that hold at least the quota.
func (l *local) settle() { l.ackTo(l.syncTo) }

// settleCarry marks the admits a query carried as acknowledged: its answer
// came, so the store applied them.
func (l *local) settleCarry() { l.ackTo(l.pushed) }

// ackTo acknowledges the admits up to index to (never going back).
func (l *local) ackTo(to int) {
	to = max(to, l.acked)
	if l.hist != nil {
		for i := l.acked; i < to; i++ {
			l.hist.add(l.stamps[i], l.counts[i])
		}
	}
	l.seq += uint64(to - l.acked)
	l.acked = to
	l.lo = max(l.lo, min(l.win, l.acked))
	for l.lo < l.acked && l.units(l.lo+1)-l.units(l.acked) >= l.quota {
		l.lo++
	}
	if l.lo > 0 && 2*l.lo >= len(l.stamps) {
		l.compact()
	}
}

// compact drops the forgotten entries.
func (l *local) compact() {
	l.base = l.cum[l.lo-1]
	n := copy(l.stamps, l.stamps[l.lo:])
	copy(l.counts, l.counts[l.lo:])
	copy(l.cum, l.cum[l.lo:])
	l.stamps, l.counts, l.cum = l.stamps[:n], l.counts[:n], l.cum[:n]
	l.win = max(l.win-l.lo, 0)
	l.acked -= l.lo
	l.pushed -= l.lo
	l.syncTo = max(l.syncTo-l.lo, 0)
	l.lo = 0
	l.heavy = 0
	for _, c := range l.counts {
		if c > 1 {
			l.heavy++
		}
	}
}

// unsynced reports whether some admits are not pushed yet.
func (l *local) unsynced() bool { return len(l.stamps) > l.acked }

// quietSyncs is QuietSyncs for a design whose syncs only push its admits
// (and refresh what it pulls): quiet forever while it has nothing to push.
func (l *local) quietSyncs() int {
	if l.unsynced() || l.waiting() {
		return 0
	}
	return math.MaxInt
}

// age forgets what has left the window at now and returns the index of the
// first stamp that counts.
func (l *local) age(now int64) int {
	lo := l.spec.Lo(now)
	win, stamps := l.win, l.stamps // in locals, not the record's fields every step
	for win < len(stamps) && stamps[win] < lo {
		win++
	}
	l.win = win
	return max(win, l.lo)
}

// sinceSync is the index of the first admit not yet acknowledged that
// still counts at now: len(stamps) less it is how many count.
func (l *local) sinceSync(now int64) int { return max(l.age(now), l.acked) }

// count is the own admits that count at now, exact up to the quota.
func (l *local) count(now int64) int { return l.units(l.age(now)) }

// sinceSyncCount is how many of the admits not yet acknowledged still count
// at now.
func (l *local) sinceSyncCount(now int64) int { return l.units(l.sinceSync(now)) }

// allow is the local-quota rule: it admits and records n requests at now if
// own admits in the window then number at most the quota.
func (l *local) allow(now int64, n int) Verdict {
	if l.count(now)+n > l.quota {
		return Reject
	}
	l.add(now, n)
	return Admit
}

// refusesUntil is Refuser.RefusesUntil for the local-quota rule.
func (l *local) refusesUntil(now int64) int64 {
	if l.count(now)+1 <= l.quota {
		return now
	}
	t, _ := l.oldest(now) // the quota is used, so some admit counts
	return l.spec.Reset(now, t)
}

// quotaView is the local quota's view: what is left, and when the oldest own
// admit that counts leaves the window.
func (l *local) quotaView(now int64) (int, int64) { return l.view(now, 0, 0, false) }

// oldest returns the oldest own admit that counts at now, and false when
// none does.
func (l *local) oldest(now int64) (int64, bool) {
	if first := l.age(now); first < len(l.stamps) {
		return l.stamps[first], true
	}
	return 0, false
}

// view returns what is left of the quota at now with used admits counted
// besides the record's own, and when the oldest of oldest (when ok) and the
// record's own leaves the window (now when nothing counts).
func (l *local) view(now int64, used int, oldest int64, ok bool) (int, int64) {
	left := max(l.quota-l.count(now)-used, 0)
	if t, has := l.oldest(now); has && (!ok || t < oldest) {
		oldest, ok = t, true
	}
	if !ok {
		return left, now
	}
	return left, l.spec.Reset(now, oldest)
}

// restore counts own admits of an earlier life of the key that the store
// holds, beyond those the record counts, as acknowledged admits at now:
// they count a whole window from now, never shorter than they should.
func (l *local) restore(now int64, own int) {
	if extra := own - l.count(now); extra > 0 {
		l.add(now, extra)
		l.pushed = len(l.stamps)
		l.acked = l.pushed
	}
}

// inherit takes into the quota's history the admits of old, a record of the
// same key made under another fleet or limit, that still count at now. They
// count as acknowledged: old's driver pushes what old had not, so this
// record never pushes them again.
func (l *local) inherit(now int64, old *local) {
	from := old.age(now)
	for i := from; i < len(old.stamps); i++ {
		l.stamps = append(l.stamps, old.stamps[i])
		l.counts = append(l.counts, old.counts[i])
		c := l.base + int64(old.counts[i])
		if n := len(l.cum); n > 0 {
			c = l.cum[n-1] + int64(old.counts[i])
		}
		l.cum = append(l.cum, c)
		if old.counts[i] > 1 {
			l.heavy++
		}
	}
	l.acked, l.pushed = len(l.stamps), len(l.stamps)
	if l.hist != nil {
		l.hist.copyFrom(old.hist)
	}
}
