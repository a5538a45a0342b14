package sim

import (
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
)

// The fault engine runs a run whose store or gateways are not ideal
// (Params.Faults): round trips that take time, lost syncs, skewed clocks and
// restarts. It performs every sync and keeps what is in flight in an event
// queue. It drives the designs as the live limiter does:
//
//   - a gateway waits for one round trip at a time for the key (the live
//     limiter holds the key's lock across it): requests that arrive
//     meanwhile wait in line and are decided, in order, when the answer
//     has come; so do a sync's push and pull that fall in the wait;
//   - a sync is one push and one pull; a gateway whose last sync is still
//     out when the next is due leaves that one out;
//   - the store takes each call's time from the gateway's clock at sending.
//
// With every fault at zero it makes exactly the plain mode's decisions
// (tested), but the plain modes are faster, so run uses it only when a
// fault is set.

// evKind is what an event does.
type evKind uint8

const (
	evRestart   evKind = iota // a gateway loses its state
	evStoreSync               // a push reaches the store
	evStoreAsk                // a query reaches the store
	evPull                    // a pull reaches the gateway
	evSyncLost                // the gateway gives up on a sync whose push or pull was lost
	evAnswer                  // an answer reaches the gateway
	evMembers                 // the fleet's size changes
	evLearn                   // a gateway learns the fleet's size
	evForget                  // the store loses everything it holds
)

// event is something in flight.
type event struct {
	t    int64
	seq  uint64 // ties in the order scheduled
	kind evKind
	g    int
	life uint32 // the gateway life it belongs to
	c    int    // evStoreAsk, evAnswer: the request's traffic
	sent int64  // the gateway's clock when sent
	at   int64  // evPull: when the store read what it carries
	back int64  // the round trip's second half
	push store.Push
	pull store.Pull
	q    store.Query
	a    store.Answer
	k    int   // evMembers, evLearn: the fleet's size
	gone []int // evLearn: the members that left, as the gateway learns them
	down bool  // evSyncLost, evAnswer: the store was down: the call failed
}

// waitKind is what waits at a gateway while it waits on the store.
type waitKind uint8

const (
	waitArrival waitKind = iota // a request, to decide
	waitPull                    // a sync's pull, to apply
	waitSync                    // a sync that came due, to start
)

// deferred is what waits at a gateway while it waits on the store.
type deferred struct {
	kind waitKind
	c    int // waitArrival: the request's traffic
	pull store.Pull
	at   int64 // waitPull: when the store read it
}

// gwState is a gateway's part in the fault engine.
type gwState struct {
	waiting bool // a round trip is out
	syncing bool // a sync is out
	queue   []deferred
	life    uint32
	off     int64 // its clock: true time + off
	// membership: whether it is live, the K it decides with, the
	// departed members it knows of, its designs made anew in this life,
	// and the phase of its heartbeats
	alive   bool
	k       int
	gone    []int
	remakes uint64
	beat    int64
	// an outage: whether it falls back for every request (until a sync
	// succeeds), its request-path calls failed in a row, and how many
	// times its design has found the store forgot the key
	degraded bool
	back     bool // degraded, and one sync has succeeded since the outage
	fails    int
	forgot   int
}

// epoch is the epoch of the gateway's design now: later for every restart
// and every remaking.
func (s *gwState) epoch() uint64 { return uint64(s.life)<<20 + s.remakes }

type engine struct {
	r    *runner
	d    *delays
	f    Faults
	gs   []gwState
	ev   eventHeap
	seq  uint64
	live int // gateways 0 to live-1 are the fleet
}

// faulty runs r with its faults.
func (r *runner) faulty() {
	f := r.p.Faults
	e := &engine{r: r, d: newDelays(f, r.p.Seed), f: f, gs: make([]gwState, len(r.gws))}
	for i, off := range clockOffsets(f.Skew, r.p.Seed, len(e.gs)) {
		e.gs[i].off = off
	}
	e.membership()
	if r.watch != nil {
		r.watch.view = e.view
	}
	for _, rs := range f.Restarts {
		for g := range e.gs {
			if rs.Gateway == AllGateways || rs.Gateway == g {
				e.schedule(event{t: int64(rs.At), kind: evRestart, g: g})
			}
		}
	}
	for _, t := range f.Forgets {
		e.schedule(event{t: int64(t), kind: evForget})
	}
	e.run()
}

// syncs reports whether the run's gateways sync: every design but one that
// needs no sync (central-log), which syncs when a store that fails or
// forgets leaves it something to push, or falls back.
func (e *engine) syncs() bool {
	return !e.r.info.NoSync || len(e.f.Outages) > 0 || len(e.f.Forgets) > 0
}

// clockOffsets draws each of k gateways' clock offset, uniformly within
// [-skew, skew], plus skew so that no clock reads below 0.
func clockOffsets(skew time.Duration, seed uint64, k int) []int64 {
	off := make([]int64, k)
	if skew == 0 {
		return off
	}
	srng := rngFor(seed, streamSkew)
	for i := range off {
		off[i] = srng.Int64N(2*int64(skew) + 1)
	}
	return off
}

func (e *engine) schedule(ev event) {
	e.seq++
	ev.seq = e.seq
	e.ev.push(ev)
}

func (e *engine) clock(t int64, g int) int64 { return t + e.gs[g].off }

// view is gateway g's view of the key at true time at (by the Fallback's
// rule while it falls back), and whether it is in the fleet.
func (e *engine) view(g int, at int64) (int, bool) {
	if g >= e.live || !e.gs[g].alive {
		return 0, false
	}
	v, _ := e.r.gws[g].View(e.clock(at, g), e.gs[g].degraded)
	return v, true
}

// run processes, in time order, what is in flight, then the syncs due, then
// the arrivals; at equal times in that order, as the plain modes do syncs
// before arrivals.
func (e *engine) run() {
	r := e.r
	sy := syncClock{r: r}
	at, g, c := r.src.next()
	syncs := e.syncs()
	for {
		next := min(at, r.end)
		if syncs {
			next = min(next, sy.at())
		}
		if len(e.ev.h) > 0 && e.ev.h[0].t <= next {
			ev := e.ev.pop()
			if ev.t >= r.end {
				break
			}
			if r.watch != nil {
				r.watch.step(ev.t)
			}
			e.handle(ev)
			continue
		}
		if next >= r.end {
			break
		}
		if r.watch != nil {
			r.watch.step(next)
		}
		if syncs && sy.at() == next {
			e.syncDue(next, sy.g())
			sy.advance()
			continue
		}
		e.arrive(at, g, c)
		at, g, c = r.src.next()
	}
	e.finish()
}

// finish counts the requests still waiting at the run's end as rejected:
// none of them was admitted.
func (e *engine) finish() {
	last := e.r.end - 1
	for _, ev := range e.ev.h {
		if ev.kind == evStoreAsk || ev.kind == evAnswer {
			e.r.m.record(last, design.Reject, ev.c)
		}
	}
	for i := range e.gs {
		e.dropQueue(last, i)
	}
}

func (e *engine) dropQueue(t int64, g int) {
	for _, d := range e.gs[g].queue {
		if d.kind == waitArrival {
			e.r.m.record(t, design.Reject, d.c)
		}
	}
	e.gs[g].queue = e.gs[g].queue[:0]
}

func (e *engine) handle(ev event) {
	r := e.r
	switch ev.kind {
	case evRestart:
		if e.gs[ev.g].alive {
			e.restart(ev.t, ev.g)
		}
	case evMembers:
		e.resize(ev.t, ev.k)
	case evLearn:
		e.learn(ev)
	case evForget:
		r.key.Forget(ev.t)
	case evStoreSync:
		if e.f.down(ev.t) {
			e.schedule(event{t: ev.t + ev.back, kind: evSyncLost, g: ev.g, life: ev.life, down: true})
			return
		}
		if e.d.lost(e.f.Loss) {
			e.schedule(event{t: ev.t + ev.back, kind: evSyncLost, g: ev.g, life: ev.life})
			return
		}
		pull := r.storeSync(ev.sent, ev.push)
		e.happen(Happening{Kind: Pushed, At: ev.t, Gateway: ev.g, Stamp: ev.sent, Came: ev.sent - e.gs[ev.g].off})
		if e.d.lost(e.f.Loss) {
			e.schedule(event{t: ev.t + ev.back, kind: evSyncLost, g: ev.g, life: ev.life})
			return
		}
		// the store's Expiring is scratch, valid until its next call
		pull.Expiring = append([]int64(nil), pull.Expiring...)
		if pull.ExpiringCounts != nil {
			pull.ExpiringCounts = append([]int(nil), pull.ExpiringCounts...)
		}
		e.schedule(event{t: ev.t + ev.back, kind: evPull, g: ev.g, life: ev.life, pull: pull, at: ev.t})
	case evStoreAsk:
		if ev.down = e.f.down(ev.t); !ev.down {
			ev.a = r.storeAnswer(ev.sent, ev.g, ev.q)
			e.carried(ev.t, ev.g, ev.sent, ev.q)
		}
		ev.kind, ev.t = evAnswer, ev.t+ev.back
		e.schedule(ev)
	case evPull, evSyncLost:
		s := &e.gs[ev.g]
		if ev.life != s.life {
			return // to a gateway that has restarted since
		}
		if ev.kind == evSyncLost {
			s.syncing = false
			s.degraded = s.degraded || ev.down
			return
		}
		if s.waiting {
			s.queue = append(s.queue, deferred{kind: waitPull, pull: ev.pull, at: ev.at})
			return
		}
		e.pull(ev.t, ev.g, ev.pull, ev.at)
	case evAnswer:
		e.answer(ev)
	}
}

// syncDue is gateway g's sync coming round at t.
func (e *engine) syncDue(t int64, g int) {
	s := &e.gs[g]
	switch {
	case !s.alive:
	case e.r.info.NoSync && !s.degraded && e.r.gws[g].(lazy).QuietSyncs() > 0:
		// a design that needs no sync, with nothing to push
	case s.syncing:
		// the last one is still out: this one is left out
	case s.waiting:
		if len(s.queue) == 0 || s.queue[len(s.queue)-1].kind != waitSync {
			s.queue = append(s.queue, deferred{kind: waitSync})
		}
	default:
		e.startSync(t, g)
	}
}

func (e *engine) startSync(t int64, g int) {
	r, s := e.r, &e.gs[g]
	gw := r.gws[g]
	held := r.heldBefore(g)
	now := e.clock(t, g)
	gw.SyncPush(now, &r.push) // the runner's scratch: a local would escape
	push := r.push
	push.Gone = s.gone
	r.m.performed++
	r.watch.synced(t)
	r.heldAfter(t, g, held)
	if e.f.RTT == 0 {
		if e.f.down(t) {
			s.degraded = true
			return
		}
		if e.d.lost(e.f.Loss) {
			return
		}
		pull := r.storeSync(now, push)
		e.happen(Happening{Kind: Pushed, At: t, Gateway: g, Stamp: now, Came: t})
		if e.d.lost(e.f.Loss) {
			return
		}
		e.pull(t, g, pull, t)
		return
	}
	s.syncing = true
	rtt := e.d.rtt()
	e.schedule(event{t: t + rtt/2, kind: evStoreSync, g: g, life: s.life, sent: now, back: rtt - rtt/2, push: push})
}

// pull applies at t, to gateway g, the pull p the store read at read.
func (e *engine) pull(t int64, g int, p store.Pull, read int64) {
	r, s := e.r, &e.gs[g]
	e.happen(Happening{Kind: Heard, At: read, Gateway: g})
	s.syncing, s.fails = false, 0
	// the first sync after an outage pushes the fallback's admits; the
	// others' arrive within a sync interval: until its next sync the
	// gateway still falls back, from the fresh count (the live limiter
	// does the same)
	s.degraded, s.back = s.degraded && !s.back, s.degraded && !s.back
	held := r.heldBefore(g)
	r.pull = p // the runner's scratch: p's address would escape
	r.gws[g].SyncPull(e.clock(t, g), &r.pull)
	r.heldAfter(t, g, held)
	if f, ok := r.gws[g].(design.Forgetful); ok && f.Forgotten() != s.forgot {
		s.forgot = f.Forgotten()
		e.startSync(t, g) // re-seed at once, as the live limiter does
	}
}

// arrive is a request at t of traffic c reaching gateway g.
func (e *engine) arrive(t int64, g, c int) {
	if !e.gs[g].alive { // a targeted part's gateway that left
		g %= e.live
	}
	if s := &e.gs[g]; s.waiting {
		s.queue = append(s.queue, deferred{kind: waitArrival, c: c})
		return
	}
	e.decide(t, g, c)
}

// decide decides a request at t; when it must wait on the store, the
// decision is made when the answer arrives.
func (e *engine) decide(t int64, g, c int) {
	r, s := e.r, &e.gs[g]
	gw := r.gws[g]
	held := r.heldBefore(g)
	now := e.clock(t, g)
	if s.degraded {
		r.m.fallbacks++
		v := gw.Fallback(now, 1)
		slot := r.spentSlot(g, held)
		r.heldAfter(t, g, held)
		e.record(t, g, v, c, Happening{Stamp: now, Fallback: true, Slot: slot})
		return
	}
	v, q := gw.Decide(now, 1)
	how := Happening{Stamp: now}
	if v == design.Ask {
		r.m.roundTrips++
		r.watch.asked(t)
		if e.f.RTT == 0 {
			if e.f.down(t) {
				v, how.Fallback = e.abandon(g, now, q), true
				how.Slot = r.spentSlot(g, held)
			} else {
				a := r.storeAnswer(now, g, q)
				e.carried(t, g, now, q)
				v, how.Asked = gw.Resume(now, 1, q, a), logs(q)
				if logs(q) {
					e.happen(Happening{Kind: Heard, At: t, Gateway: g, Asked: true})
				}
			}
		} else {
			r.heldAfter(t, g, held)
			s.waiting = true
			rtt := e.d.rtt()
			e.schedule(event{t: t + rtt/2, kind: evStoreAsk, g: g, life: s.life, c: c, sent: now, back: rtt - rtt/2, q: q})
			return
		}
	}
	r.heldAfter(t, g, held)
	e.record(t, g, v, c, how)
}

// record takes gateway g's decision v at t of a request of traffic c;
// how says how it was made (its Stamp, Asked, Fallback), for the history.
func (e *engine) record(t int64, g int, v design.Verdict, c int, how Happening) {
	e.r.m.record(t, v, c)
	if e.r.trace != nil {
		e.r.trace(t, g, v)
	}
	how.Kind, how.At, how.Gateway, how.Verdict, how.Came = Decided, t, g, v, how.Stamp-e.gs[g].off
	e.happen(how)
}

// logs reports whether q's answer counts its request at the store (a
// central check or a counter's), rather than granting slots.
func logs(q store.Query) bool { return q.Kind == store.QueryCentral || q.Kind == store.QueryCounter }

// carried notes, for the history, a query that brought the store, at t,
// what gateway g had to push: a push it carries, or a counter query
// (central-counter's carries its fallback's admits).
func (e *engine) carried(t int64, g int, sent int64, q store.Query) {
	if q.Carry != nil || q.Kind == store.QueryCounter {
		e.happen(Happening{Kind: Pushed, At: t, Gateway: g, Stamp: sent, Came: sent - e.gs[g].off, Asked: true})
	}
}

// happen hands h to the run's history, if it keeps one.
func (e *engine) happen(h Happening) {
	if e.r.history != nil {
		e.r.history(h)
	}
}

// answer finishes a decision that waited on the store, then what waited
// behind it.
func (e *engine) answer(ev event) {
	r, s := e.r, &e.gs[ev.g]
	if ev.life != s.life {
		r.m.record(ev.t, design.Reject, ev.c) // its gateway restarted meanwhile
		e.happen(Happening{Kind: Decided, At: ev.t, Gateway: ev.g, Stamp: ev.sent, Came: ev.sent - s.off, Verdict: design.Reject})
		return
	}
	held := r.heldBefore(ev.g)
	var v design.Verdict
	how := Happening{Stamp: ev.sent}
	if now := e.clock(ev.t, ev.g); ev.down {
		v, how.Fallback = e.abandon(ev.g, now, ev.q), true
		how.Slot = r.spentSlot(ev.g, held)
	} else {
		s.fails = 0
		v, how.Asked = r.gws[ev.g].Resume(now, 1, ev.q, ev.a), logs(ev.q)
		if logs(ev.q) {
			e.happen(Happening{Kind: Heard, At: ev.t - ev.back, Gateway: ev.g, Asked: true})
		}
	}
	r.heldAfter(ev.t, ev.g, held)
	e.record(ev.t, ev.g, v, ev.c, how)
	s.waiting = false
	e.drain(ev.t, ev.g)
}

// abandon ends gateway g's decision whose call failed: the design
// withdraws it and falls back, and FailAfter failures in a row make the
// gateway fall back for every request until a sync succeeds.
func (e *engine) abandon(g int, now int64, q store.Query) design.Verdict {
	s := &e.gs[g]
	if s.fails++; s.fails >= FailAfter {
		s.degraded = true
	}
	e.r.m.fallbacks++
	return e.r.gws[g].Abandon(now, 1, q, true)
}

// drain runs what waited at gateway g, at t, until it must wait again.
func (e *engine) drain(t int64, g int) {
	s := &e.gs[g]
	i := 0
	for ; i < len(s.queue) && !s.waiting; i++ {
		d := s.queue[i]
		switch d.kind {
		case waitArrival:
			e.decide(t, g, d.c)
		case waitPull:
			e.pull(t, g, d.pull, d.at)
		case waitSync:
			if !s.syncing {
				e.startSync(t, g)
			}
		}
	}
	n := copy(s.queue, s.queue[i:])
	s.queue = s.queue[:n]
}

// restart makes gateway g lose its state at t: a new life of the design,
// which pushes with a later epoch; the requests waiting there are lost, and
// what it had in flight is ignored when it comes back. Its lease slots stay
// counted at the store until its next push settles them.
func (e *engine) restart(t int64, g int) {
	r, s := e.r, &e.gs[g]
	e.dropQueue(t, g)
	held := r.heldBefore(g)
	s.life++
	s.remakes = 0
	s.waiting, s.syncing = false, false
	cfg := r.gatewayConfig(g)
	cfg.Gateways, cfg.Epoch = s.k, s.epoch()
	r.gws[g] = r.info.New(cfg)
	if r.info.Leases {
		r.m.held(t, -held)
	}
}

// syncClock walks the syncs of every gateway in time order: with one Δ for
// all they come round in the order of their phases.
type syncClock struct {
	r     *runner
	j     int
	round int64
}

func (sc *syncClock) g() int { return sc.r.order[sc.j] }

func (sc *syncClock) at() int64 { return sc.r.phase[sc.g()] + sc.round*sc.r.delta }

func (sc *syncClock) advance() {
	if sc.j++; sc.j == len(sc.r.order) {
		sc.j = 0
		sc.round++
	}
}

// eventHeap orders events by time, then by scheduling order.
type eventHeap struct{ h []event }

func (q *eventHeap) less(a, b int) bool {
	x, y := &q.h[a], &q.h[b]
	return x.t < y.t || x.t == y.t && x.seq < y.seq
}

func (q *eventHeap) push(ev event) {
	q.h = append(q.h, ev)
	j := len(q.h) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !q.less(j, p) {
			break
		}
		q.h[j], q.h[p] = q.h[p], q.h[j]
		j = p
	}
}

func (q *eventHeap) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	j := 0
	for {
		l := 2*j + 1
		if l >= n {
			break
		}
		m := l
		if rr := l + 1; rr < n && q.less(rr, l) {
			m = rr
		}
		if !q.less(m, j) {
			break
		}
		q.h[j], q.h[m] = q.h[m], q.h[j]
		j = m
	}
	return top
}
