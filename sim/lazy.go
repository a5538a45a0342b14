package sim

import (
	"math"
)

// never is a time after every run.
const never = math.MaxInt64

// arrival is a request known ahead of its turn.
type arrival struct {
	t    int64
	g, c int // gateway, traffic
}

// lazySched is the lazy mode's bookkeeping for one gateway.
type lazySched struct {
	next int64   // index of its next sync not yet performed or skipped
	due  int64   // time of the next sync that must be performed
	need []int64 // PullsView: times of the last sync before each known arrival, ascending
	rank int     // position in the sync order, for ties
	// byRoom: due comes from syncs quiet only while the store has no room
	// (QuietWhenFull), so room sooner than thought may bring it forward
	byRoom bool
	// rates: the store's RateVersion after the gateway's last sync
	// performed (rateLazy)
	rates uint64
}

// heldRates is a rateLazy gateway as the lazy mode sees it: quiet by its
// own count while the store's rates are those of its last sync, and due
// at its next sync once they changed.
type heldRates struct {
	rateLazy
	lr *lazyRun
	i  int
}

func (h heldRates) QuietSyncs() int {
	if h.lr.sc[h.i].rates != h.lr.r.key.RateVersion() {
		return 0
	}
	return h.rateLazy.QuietWhileRatesHold()
}

// lazyRun performs only the syncs that change something: those a design
// does not declare quiet, and, for designs whose view comes from the last
// pull, the last sync before each of the gateway's decisions. To know those
// in time it reads the arrivals at least Δ ahead. It makes exactly the eager
// mode's decisions.
type lazyRun struct {
	r     *runner
	lz    []lazy
	sc    []lazySched
	pulls bool // the design's view comes from the last pull
	// full, for lease designs whose syncs regrant what they hand back
	// while the store has no room, and fullUntil, the first instant the
	// store may have room (0: it has room now)
	full      []quietWhenFull
	fullUntil int64
	rates     bool // the gateways are rateLazy
	h         *dueQueue

	buf  []arrival // arrivals known ahead, a queue
	head int
	genT int64 // time of the last arrival generated
	done bool  // the arrivals have reached the end of the run
}

// lazy runs r in the lazy mode.
func (r *runner) lazy() {
	k := len(r.gws)
	lr := &lazyRun{r: r, lz: make([]lazy, k), sc: make([]lazySched, k), genT: -1}
	lr.h = newDueQueue(lr.sc, r.order)
	for _, i := range r.order {
		if r.gws[i] == nil { // no request reaches it, and it never syncs (execute)
			continue
		}
		if l, ok := r.gws[i].(lazy); ok {
			lr.lz[i] = l
		} else {
			lr.lz[i], lr.rates = heldRates{r.gws[i].(rateLazy), lr, i}, true
		}
	}
	lr.pulls = lr.lz[0].PullsView()
	if _, ok := r.gws[0].(quietWhenFull); ok && r.p.LeasePolicy != MaxMin {
		lr.full = make([]quietWhenFull, k)
		for i, gw := range r.gws {
			if gw != nil {
				lr.full[i] = gw.(quietWhenFull)
			}
		}
	}
	for i := range r.gws {
		lr.reschedule(i)
	}
	lr.run()
}

// at is the time of gateway i's sync number n.
func (lr *lazyRun) at(i int, n int64) int64 { return lr.r.phase[i] + n*lr.r.delta }

// lastBefore is the index of gateway i's last sync at or before t, or -1.
func (lr *lazyRun) lastBefore(i int, t int64) int64 {
	if t < lr.r.phase[i] {
		return -1
	}
	return (t - lr.r.phase[i]) / lr.r.delta
}

// reschedule sets gateway i's next sync that must be performed.
func (lr *lazyRun) reschedule(i int) {
	r, s := lr.r, &lr.sc[i]
	if lr.lz[i] == nil {
		return // never due
	}
	due := int64(never)
	q := lr.lz[i].QuietSyncs()
	s.byRoom = false
	if q == 0 && lr.full != nil {
		q = lr.quietWhileFull(i)
		s.byRoom = q > 0
	}
	if q != math.MaxInt {
		if n := s.next + int64(q); n < (r.end-r.phase[i])/r.delta+1 {
			due = lr.at(i, n)
		}
	}
	if len(s.need) > 0 && s.need[0] < due {
		due = s.need[0]
	}
	if due != s.due {
		s.due = due
		lr.h.fix(i)
	}
}

// quietWhileFull is how many of gateway i's next syncs are quiet because
// the store has no room until fullUntil.
func (lr *lazyRun) quietWhileFull(i int) int {
	s := &lr.sc[i]
	if lr.fullUntil <= lr.at(i, s.next) {
		return 0
	}
	until := min(lr.fullUntil, lr.r.end)                       // past the run's end: never
	m := (until - lr.r.phase[i] + lr.r.delta - 1) / lr.r.delta // the first sync from until on
	return int(min(int64(lr.full[i].QuietWhenFull()), m-s.next))
}

// storeChanged takes the store's room after a call at the point (t, rank)
// of the sync order (rank len(sc) after the syncs at t). When the store may
// have room sooner than thought, every gateway is rescheduled from that
// point, its syncs before it having been quiet; when later, a gateway whose
// sync comes due while the store is still full skips it then (syncUpTo).
func (lr *lazyRun) storeChanged(t int64, rank int) {
	full, until := lr.r.key.Full(t)
	if !full {
		until = 0
	}
	sooner := until < lr.fullUntil
	lr.fullUntil = until
	if !sooner {
		return
	}
	for i := range lr.sc {
		if !lr.sc[i].byRoom {
			continue // quiet by its own count, or due at its next sync: room changes neither
		}
		n := lr.lastBefore(i, t) + 1
		if n > 0 && lr.at(i, n-1) == t && lr.sc[i].rank > rank {
			n-- // its sync at t comes after the point
		}
		lr.catchUp(i, n)
		lr.reschedule(i)
	}
}

// ratesChanged takes gateway g's sync at t, the store's RateVersion having
// been before: every other gateway whose quiet syncs counted on the rates
// then syncs at its first sync after this one.
func (lr *lazyRun) ratesChanged(g int, t int64, before uint64) {
	now := lr.r.key.RateVersion()
	lr.sc[g].rates = now
	if now == before {
		return
	}
	rank := lr.sc[g].rank
	for i := range lr.sc {
		if i == g {
			continue
		}
		n := lr.lastBefore(i, t) + 1
		if n > 0 && lr.at(i, n-1) == t && lr.sc[i].rank > rank {
			n-- // its sync at t comes after this one
		}
		lr.catchUp(i, n)
		lr.reschedule(i)
	}
}

// catchUp skips gateway i's quiet syncs before index n.
func (lr *lazyRun) catchUp(i int, n int64) {
	if skip := n - lr.sc[i].next; skip > 0 && lr.lz[i] != nil {
		lr.lz[i].Skip(int(skip))
		lr.sc[i].next = n
	}
}

// generate draws the next arrival into the queue, noting which sync its
// gateway must have performed before deciding it.
func (lr *lazyRun) generate() {
	r := lr.r
	t, g, c := r.src.next()
	if t >= r.end {
		lr.done = true
		return
	}
	lr.genT = t
	lr.buf = append(lr.buf, arrival{t, g, c})
	if !lr.pulls {
		return
	}
	if n := lr.lastBefore(g, t); n >= 0 {
		s := &lr.sc[g]
		need := lr.at(g, n)
		if len(s.need) == 0 || need > s.need[len(s.need)-1] {
			s.need = append(s.need, need)
			if need < s.due {
				s.due = need
				lr.h.fix(g)
			}
		}
	}
}

// syncUpTo performs every due sync at or before t.
func (lr *lazyRun) syncUpTo(t int64) {
	for {
		g := lr.h.top()
		s := &lr.sc[g]
		if s.due > t {
			return
		}
		n := lr.lastBefore(g, s.due)
		lr.catchUp(g, n)
		if lr.full != nil && len(s.need) == 0 && lr.lz[g].QuietSyncs() == 0 && lr.quietWhileFull(g) > 0 {
			lr.reschedule(g) // the store stayed full longer than it was due
			continue
		}
		before := lr.r.key.RateVersion()
		lr.r.sync(s.due, g)
		s.next = n + 1
		if lr.rates {
			lr.ratesChanged(g, s.due, before)
		}
		done := 0
		for done < len(s.need) && s.need[done] <= s.due {
			done++
		}
		s.need = s.need[:copy(s.need, s.need[done:])] // in place: no allocation as it refills
		lr.reschedule(g)
		if lr.full != nil {
			lr.storeChanged(lr.at(g, n), s.rank)
		}
	}
}

// pop returns the next arrival, reading the arrivals Δ ahead of it, and
// false at the end of the run.
func (lr *lazyRun) pop() (arrival, bool) {
	if lr.head == len(lr.buf) {
		if lr.head > 0 {
			lr.buf, lr.head = lr.buf[:0], 0
		}
		if !lr.done {
			lr.generate()
		}
		if lr.done && lr.head == len(lr.buf) {
			return arrival{}, false
		}
	}
	front := lr.buf[lr.head]
	for !lr.done && lr.genT <= front.t+lr.r.delta {
		lr.generate()
	}
	lr.head++
	if lr.head >= 64 && lr.head*2 >= len(lr.buf) {
		n := copy(lr.buf, lr.buf[lr.head:])
		lr.buf, lr.head = lr.buf[:n], 0
	}
	return front, true
}

func (lr *lazyRun) run() {
	r := lr.r
	for {
		a, ok := lr.pop()
		if !ok {
			break
		}
		lr.syncUpTo(a.t)
		lr.catchUp(a.g, lr.lastBefore(a.g, a.t)+1)
		trips := r.m.roundTrips
		r.arrive(a.t, a.g, a.c)
		lr.reschedule(a.g)
		if lr.full != nil && r.m.roundTrips != trips {
			lr.storeChanged(a.t, len(lr.sc))
		}
	}
	if !r.noTail {
		lr.syncUpTo(r.end - 1)
	}
}

// dueQueue finds the gateway whose due sync comes first, ties in sync
// order: the ranks of the gateways due at all, kept sorted by their due
// syncs. In a quiet fleet, where the lazy mode pays off, few gateways are
// due at once (a sync after an admit, one before a decision), so keeping
// them sorted costs a few comparisons; finding the first, none.
type dueQueue struct {
	sc     []lazySched
	due    []int64 // by rank
	byRank []int   // the gateway of each rank
	list   []int32 // ranks of the gateways due before never, first due first
}

// newDueQueue orders the gateways of sc, whose sync order is order, every
// one due never.
func newDueQueue(sc []lazySched, order []int) *dueQueue {
	q := &dueQueue{sc: sc, byRank: order, due: make([]int64, len(order)), list: make([]int32, 0, len(order))}
	for r, g := range order {
		sc[g].rank, sc[g].due = r, never
		q.due[r] = never
	}
	return q
}

// before reports whether rank a's due sync comes before rank b's.
func (q *dueQueue) before(a, b int32) bool {
	return q.due[a] < q.due[b] || q.due[a] == q.due[b] && a < b
}

// top returns the gateway whose due sync comes first (one due never when
// none is due).
func (q *dueQueue) top() int {
	if len(q.list) == 0 {
		return q.byRank[0]
	}
	return q.byRank[q.list[0]]
}

// fix takes gateway i's new due sync.
func (q *dueQueue) fix(i int) {
	r := int32(q.sc[i].rank)
	l := q.list
	if q.due[r] != never { // take it out
		j := 0
		for l[j] != r {
			j++
		}
		l = l[:j+copy(l[j:], l[j+1:])]
	}
	q.due[r] = q.sc[i].due
	if q.due[r] != never { // put it back in its place, from the end
		j := len(l)
		l = append(l, r)
		for ; j > 0 && q.before(r, l[j-1]); j-- {
			l[j] = l[j-1]
		}
		l[j] = r
	}
	q.list = l
}
