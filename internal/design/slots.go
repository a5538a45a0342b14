package design

import "github.com/fleetlimit/fleetlimit/store"

// slots is what lease, lease-ask and permit share, where their rule is the
// same: a gateway that holds slots the store granted it, admits within
// them without asking, hands back at each sync what it did not use, counts
// its arrivals per sync interval to size its next ask, and, while the
// store cannot be reached, spends its slots first and then the remembering
// rule over what it last heard. How many slots to ask for, and what to do
// past them, is each design's own.
type slots struct {
	cfg   Config
	grant int  // unused granted slots
	slot  bool // the last admit spent a slot
	local local

	arr  arrivals // arrivals per sync interval over the last window
	cur  int      // arrivals in the open interval
	last int      // arrivals in the last closed interval

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
	// seen is the highest count a central admit's answer reported while
	// a sync was in flight: the store applied that check before the sync
	// (and the pull's count holds it) or after (and the pull's does not);
	// the pull takes the larger.
	seen int
	// for the fallback: when the last pull came, the slots it said were
	// outstanding fleet-wide, and the grant it brought
	pullAt int64
	// answer is the store's count at the last central answer, answerAt
	// when: the fallback starts from it while it is the larger (a new life
	// that asked but never pulled, or a pull read before it)
	answer      int
	answerAt    int64
	outstanding int
	granted     int
	// after the store lost the key: the count the gateway knew before, and
	// when, which caps the slots it uses until the store's count reaches
	// it (the fleet's re-seeds have landed) or all of it has left the
	// window
	floor   int
	floorAt int64
	// fell is the fallback's admits past the slots since the last push: a
	// pull the store read before them (it waited behind a round trip, and
	// came after the store went away) grants slots as if they were not
	// made, so they take its grant's first slots
	fell int
}

func newSlots(c Config) slots {
	return slots{cfg: c, arr: newArrivals(c, MaxLeaseBuckets), local: newLocal(c)}
}

// spend counts n arrivals and admits them on slots held, if they cover n.
func (s *slots) spend(now int64, n int) bool {
	s.cur += n
	s.slot = s.grant >= n
	if s.slot {
		s.grant -= n
		s.local.add(now, n)
	}
	return s.slot
}

// setFloor caps what the gateway admits by the count it knew before the
// store lost the key: the admits and the slots outstanding fleet-wide at
// its last pull (any of which may be spent yet), and its central admits
// since.
func (s *slots) setFloor() {
	s.floor, s.floorAt = s.count+s.centralSince+s.outstanding, s.pullAt
}

// answered takes what an answer says of the store's life of the key: when
// the store lost it, the count known before caps the slots used until the
// window is past it.
func (s *slots) answered(now int64, q store.Query, a store.Answer) {
	if q.Kind == store.QueryCentral {
		s.answer, s.answerAt = a.Count, now
	}
	if s.local.answered(now, q.Call, a.Gen) {
		s.setFloor()
	}
	if s.floor > 0 && s.floorAt < s.cfg.Window.Lo(now) {
		s.floor = 0
	}
}

// central takes the store's answer to a central check of n: an admit
// counts as known, and its top-up's slots are held.
func (s *slots) central(now int64, n int, q store.Query, a store.Answer) Verdict {
	if !a.Admit {
		return Reject
	}
	if s.floor > 0 && s.floor+s.centralSince+n > s.cfg.Limit { // a store that lost the key admitted it
		s.local.abandon(now, q)
		return Reject
	}
	switch {
	case s.syncing:
		s.seen = max(s.seen, a.Count)
		s.centralSince += n
	case s.local.crossed(q):
		// in flight across the last pull: its count is the store's, as of
		// before or after the sync, whichever it was
		s.centralSince = max(s.centralSince, a.Count-s.count)
	default:
		s.centralSince += n
	}
	s.local.remember(now, n)
	s.grant += a.Granted // a top-up
	s.granted += a.Granted
	return Admit
}

// unadmit returns a slot, forgets a fallback's admit, or withdraws a
// central admit at the next contact; it reports the last.
func (s *slots) unadmit(now int64, n int, q store.Query) (central bool) {
	switch {
	case s.slot:
		s.grant += n
		s.local.unadd(n)
	case q.Kind == store.QueryCentral:
		s.centralSince = max(s.centralSince-n, 0)
		s.local.abandon(now, q)
		return true
	default:
		s.local.unadd(n)
	}
	return false
}

// Fallback spends the slots held first, which the store counts already;
// past them, the remembering rule over the store's last count, the central
// admits since and every slot outstanding at the last pull (the other
// gateways may use theirs), with this gateway's admits beyond its slots as
// its own.
func (s *slots) Fallback(now int64, n int) Verdict {
	if s.slot = s.grant >= n; s.slot {
		s.grant -= n
		s.local.add(now, n)
		return Admit
	}
	known, own := s.remembered(now)
	if !remembered(&s.cfg, known, own, n) {
		return Reject
	}
	s.local.add(now, n)
	s.fell += n
	return Admit
}

// remembered is the fallback's view: the requests the store counts or has
// granted slots for, as last heard, and this gateway's admits beyond them.
func (s *slots) remembered(now int64) (known, own int) {
	lo := s.cfg.Window.Lo(now)
	known = s.centralSince + s.outstanding
	if s.pullAt >= lo {
		known += s.count // the pull's admits still count
	}
	if s.answerAt >= lo {
		// the store's count at the last central answer: a pull applied
		// after it may have been read before it (it waited behind a
		// round trip), so the larger of the two is the later
		known = max(known, s.answer+s.outstanding)
	}
	own = s.local.sinceSyncCount(now)
	if s.pullAt >= lo {
		// the slots it used since the pull are in the outstanding count,
		// and, younger than the pull, still in the window
		return known, max(own-(s.granted-s.grant), 0)
	}
	// A window after the pull its used slots may have left the window
	// (the nemesis found a fleet that counted them gone while still
	// subtracting them, admitting them again): its admits count as its
	// own, and its slots leave the outstanding count.
	return known - min(s.granted, s.outstanding), own
}

// closeInterval closes the open sync interval at a push.
func (s *slots) closeInterval() {
	s.last = s.cur
	s.arr.closeInterval(s.cur)
	s.cur = 0
}

// push hands back every slot held with the push p, which asks for ask.
func (s *slots) push(p *store.Push, ask, spare int) {
	*p = store.Push{Gateway: s.cfg.Gateway, Ask: ask, Spare: spare}
	s.local.push(p)
	s.grant, s.fell = 0, 0 // handed back by the push; a new grant comes with the pull
	s.syncing, s.seen = true, 0
}

// pulled takes a sync's answer: the grant, the store's count, and the
// slots outstanding fleet-wide; it reports whether the store had lost the
// key.
func (s *slots) pulled(now int64, p *store.Pull) (forgot bool) {
	if forgot = s.local.pulled(now, p); forgot {
		s.setFloor()
	}
	// A central admit answered while the sync was in flight may be in the
	// pull's count or not: the larger count of the two is the later.
	s.grant, s.count, s.centralSince = max(p.Granted-s.fell, 0), p.Count, max(s.seen-p.Count, 0)
	s.seen = 0
	if s.floor > 0 {
		// a store that lost the key grants against a count without the
		// admits the fleet has not re-seeded yet: use no more slots than
		// the count remembered leaves
		if p.Count >= s.floor || s.floorAt < s.cfg.Window.Lo(now) {
			s.floor = 0
		} else {
			s.grant = s.capped(s.grant)
		}
	}
	s.pullAt, s.outstanding, s.granted = now, p.Outstanding, p.Granted
	return forgot
}

// capped is a grant after the store lost the key: no more slots than the
// count remembered leaves.
func (s *slots) capped(grant int) int { return max(min(grant, s.cfg.Limit-s.floor), 0) }

// skip accounts for n quiet syncs: each closed an empty interval.
func (s *slots) skip(n int) {
	s.arr.closeEmpty(n)
	s.last = 0
	s.syncing = false
}

// quiet reports whether nothing arrived since the last sync and nothing is
// to be pushed.
func (s *slots) quiet() bool {
	return s.cur == 0 && !s.local.unsynced() && !s.local.waiting()
}

// Held returns the unused granted slots.
func (s *slots) Held() int { return s.grant }

// heldView is View's answer in a fallback: the slots held and what the
// remembering rule admits past them.
func (s *slots) heldView(now int64) (int, int64) {
	known, own := s.remembered(now)
	return s.grant + rememberedLeft(&s.cfg, known, own), 0
}

// askedView is the view of a design that asks the store when its slots run
// out: what the store's last count left of the limit, less its own admits
// since, and at least the slots it holds; a central admit made while a
// sync was in flight and reaching the store after its push is missing
// from it until the next pull.
func (s *slots) askedView(now int64) (int, int64) {
	return max(s.grant, s.cfg.Limit-s.count-s.centralSince-s.local.sinceSyncCount(now)), 0
}

// Forgotten counts the store's losses of the key (Forgetful).
func (s *slots) Forgotten() int { return s.local.forgot }
