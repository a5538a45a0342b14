package memstore

import (
	"math"
	"slices"
	"sort"

	"github.com/fleetlimit/fleetlimit/internal/slotworth"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// entries are the admits of a key in parallel arrays: when, how many
// requests each stands for (a request of cost n is one entry of n), and
// which gateway admitted it. The times alone are what a pull hands out, so
// they are kept apart.
type entries struct {
	t  []int64
	n  []int
	gw []int32
}

func (e *entries) len() int { return len(e.t) }

// truncate keeps the first i entries.
func (e *entries) truncate(i int) { e.t, e.n, e.gw = e.t[:i], e.n[:i], e.gw[:i] }

func (e *entries) add(t int64, n int, gw int32) {
	e.t, e.n, e.gw = append(e.t, t), append(e.n, n), append(e.gw, gw)
}

// grow makes room for m more entries at the end.
func (e *entries) grow(m int) {
	n := len(e.t) + m
	e.t, e.n, e.gw = slices.Grow(e.t, m)[:n], slices.Grow(e.n, m)[:n], slices.Grow(e.gw, m)[:n]
}

// set sets entry i.
func (e *entries) set(i int, t int64, n int, gw int32) { e.t[i], e.n[i], e.gw[i] = t, n, gw }

// appendFrom appends src's entries [i, j).
func (e *entries) appendFrom(src *entries, i, j int) {
	e.t, e.n, e.gw = append(e.t, src.t[i:j]...), append(e.n, src.n[i:j]...), append(e.gw, src.gw[i:j]...)
}

// drop removes the first i entries.
func (e *entries) drop(i int) {
	n := copy(e.t, e.t[i:])
	copy(e.n, e.n[i:])
	copy(e.gw, e.gw[i:])
	e.truncate(n)
}

// Key is the store state of one rate-limited key: the timestamp and gateway
// of every admitted request still inside the window (with counters, one
// entry a bucket and a gateway, stamped as window.Spec.Stamp says), and the
// lease slots each gateway holds. It is single-threaded: Store wraps Keys with a
// lock for concurrent use, the simulator uses a Key directly.
//
// Times passed to a Key never go backwards: a call with an earlier time than
// a previous one is treated as happening at that previous time.
type Key struct {
	limit int
	spec  window.Spec
	now   int64

	log   entries // ascending by t; entries [head:] are live
	head  int
	count int   // the requests the live entries stand for
	heavy int   // live entries that stand for more than one request
	own   []int // per gateway: the requests of the live entries it admitted

	out      []int // per gateway: lease slots granted and not yet settled
	outTotal int
	// refusals counts the central checks with a Spare refused because
	// the window was full (store.Query.Spare), in the window-long epoch
	// refusalsOf (now / W) and in the one before it: spare grants wait
	// while they reach Contended
	refusals   [2]int
	refusalsOf int64
	applied    []uint64 // per gateway: sequence number of the last admit applied
	epoch      []uint64 // per gateway: the epoch applied belongs to
	reseeded   []reseed // per gateway: the last re-seed applied
	// per gateway: its last central admit that named itself (Call.ID),
	// until a withdrawal or a later one settles it; a gateway asks one
	// query at a time for a key and carries its withdrawals, so one is
	// all a withdrawal can name
	lastCentral []centralAdmit
	// per gateway: the latest withdrawn query that had not been logged;
	// a query of its epoch and no later ID never may be
	barred []centralAdmit

	// gen is the key's life as Pull.Gen reports it: 0 unless Forget
	// made it anew
	gen uint64

	// the fixed-window counter of QueryCounter: the start of its window
	// and its count there
	ctrStart, ctr int64

	// maxMin: syncs grant lease slots by max-min fair shares of the room
	// over every gateway's last ask (SetMaxMinLeases); demand holds them
	maxMin bool
	rates  *rateLeases // Doorman's rate leases (SetRateLeases), or nil
	demand []int
	// per gateway: the Rate and Ask of its last spare push
	// (store.Push.Rate), which rank the spare grants
	rate, want []int
	worth      [][]float64 // per gateway: slotworth.Appended of its rate and want
	// lackVer changes whenever a gateway's rate, want or outstanding
	// slots do; per gateway, its last ranked answer and what it answered
	lackVer  uint64
	rankMemo []rankMemo

	tail entries // scratch for merges
	exp  []int64 // scratch for Pull.Expiring
	expN []int   // scratch for Pull.ExpiringCounts
}

// NewKey returns an empty Key with the given limit and window.
func NewKey(limit int, spec window.Spec) *Key {
	return &Key{limit: limit, spec: spec}
}

// Limit returns the key's limit L.
func (k *Key) Limit() int { return k.limit }

func (k *Key) advance(now int64) int64 {
	if now < k.now {
		now = k.now
	}
	k.now = now
	lo := k.spec.Lo(now)
	head, lt := k.head, k.log.t // in locals, not the key's fields every step
	for head < len(lt) && lt[head] < lo {
		n := k.log.n[head]
		k.own[k.log.gw[head]] -= n
		k.count -= n
		if n > 1 {
			k.heavy--
		}
		head++
	}
	k.head = head
	if k.head == k.log.len() {
		k.log.truncate(0)
		k.head = 0
	} else if k.head >= 1024 && k.head*2 >= k.log.len() {
		k.log.drop(k.head)
		k.head = 0
	}
	return now
}

// reseed names a gateway's re-seed of the key (store.Repair.ReseedID) in
// one of its epochs.
type reseed struct{ epoch, id uint64 }

// newReseed reports whether gateway gw's re-seed id of epoch is one the
// key has not applied, and notes it: a retried re-seed counts once, and
// an older one, late, not at all. An id of 0 is always applied.
func (k *Key) newReseed(gw int, epoch, id uint64) bool {
	last := &k.reseeded[gw]
	if id == 0 {
		return true
	}
	if epoch < last.epoch || epoch == last.epoch && id <= last.id {
		return false
	}
	*last = reseed{epoch, id}
	return true
}

// centralAdmit is a central admit that named itself: which query, when and
// how many requests.
type centralAdmit struct {
	epoch, id uint64
	t         int64 // its entry's time
	n         int
}

// gateway makes room for gateway gw's state: each per-gateway slice grows
// at once to at least twice its length (a key is made for every key a
// replay or a limiter sees, and growing a dozen slices one gateway at a
// time was a twelfth of a replay's time). A gateway never heard of holds
// zeros, as one that has not called yet.
func (k *Key) gateway(gw int) {
	if gw < len(k.own) {
		return
	}
	n := max(gw+1, 2*len(k.own), 4)
	k.lastCentral, k.barred = grown(k.lastCentral, n), grown(k.barred, n)
	k.own, k.out, k.demand = grown(k.own, n), grown(k.out, n), grown(k.demand, n)
	k.applied, k.epoch, k.reseeded = grown(k.applied, n), grown(k.epoch, n), grown(k.reseeded, n)
	k.rate, k.want, k.worth, k.rankMemo = grown(k.rate, n), grown(k.want, n), grown(k.worth, n), grown(k.rankMemo, n)
}

// grown is s with zero values appended up to length n, in one allocation.
func grown[T any](s []T, n int) []T {
	return append(s, make([]T, n-len(s))...)
}

// SetMaxMinLeases makes the key's syncs grant lease slots as Doorman
// does: the room (L less the admits in the window) is divided over the
// gateways' last asks by max-min fairness (every ask below the equal share
// is met in full, the rest share what is left equally), and a gateway gets
// at most its share, and never more than the room its peers' outstanding
// slots leave. Round trips (Grant) still grant first come.
func (k *Key) SetMaxMinLeases() { k.maxMin = true }

// fairShare is gateway gw's max-min fair share of room over the demands.
func (k *Key) fairShare(gw, room int) int {
	if room <= 0 {
		return 0
	}
	ds := make([]int, 0, len(k.demand))
	for _, d := range k.demand {
		if d > 0 {
			ds = append(ds, d)
		}
	}
	sort.Ints(ds)
	left := room
	for i, d := range ds {
		eq := left / (len(ds) - i)
		if d > eq { // every ask from here on gets the equal share
			return min(k.demand[gw], eq)
		}
		left -= d
	}
	return k.demand[gw] // every ask fits
}

// Count returns the number of admitted requests inside the window at now.
func (k *Key) Count(now int64) int {
	k.advance(now)
	return k.count
}

// Entries returns the entries the key holds: its admits in the window as of
// its last call (a request of cost n is one entry) and its fixed-window
// counter, if one is open.
func (k *Key) Entries() int {
	n := k.log.len() - k.head
	if k.ctr != 0 {
		n++
	}
	return n
}

// Full reports whether the key has no room at now, its admits in the window
// and the lease slots outstanding making its limit, and if so the first
// instant the room may open: when the oldest admit leaves the window
// (never, math.MaxInt64, when there is none).
func (k *Key) Full(now int64) (bool, int64) {
	now = k.advance(now)
	if k.count+k.outTotal < k.limit {
		return false, 0
	}
	if k.head == k.log.len() {
		return true, math.MaxInt64
	}
	return true, k.spec.Reset(now, k.log.t[k.head])
}

// Outstanding returns the lease slots granted and not yet settled, fleet-wide.
func (k *Key) Outstanding() int { return k.outTotal }

// OutstandingOf returns the lease slots granted to gateway gw and not yet
// settled.
func (k *Key) OutstandingOf(gw int) int {
	if gw < 0 || gw >= len(k.out) {
		return 0
	}
	return k.out[gw]
}

// Stamps appends the timestamps inside the window at now to dst, ascending,
// each as many times as the requests it stands for.
func (k *Key) Stamps(dst []int64, now int64) []int64 {
	k.advance(now)
	for i := k.head; i < k.log.len(); i++ {
		for range k.log.n[i] {
			dst = append(dst, k.log.t[i])
		}
	}
	return dst
}

// insert merges gw's ascending stamps (with their counts, nil: 1 each) into
// the log, dropping the ones that are already outside the window.
func (k *Key) insert(gw int, stamps []int64, counts []int) {
	lo := k.spec.Lo(k.now)
	i := sort.Search(len(stamps), func(i int) bool { return k.spec.Stamp(stamps[i]) >= lo })
	stamps = stamps[i:]
	if counts != nil {
		counts = counts[i:]
	}
	if len(stamps) == 0 {
		return
	}
	if !k.spec.Counters() {
		k.insertFromBack(gw, stamps, counts)
		return
	}
	live := k.log.t[k.head:]
	// Everything in live[p:] is later than the first new stamp; merge
	// that tail with the new stamps. Ties keep the older entry first.
	first := k.spec.Stamp(stamps[0])
	p := k.head + sort.Search(len(live), func(i int) bool { return live[i] > first })
	k.tail.truncate(0)
	k.tail.appendFrom(&k.log, p, k.log.len())
	k.log.truncate(p)
	a, end := 0, k.tail.len()
	for j, t := range stamps {
		t = k.spec.Stamp(t)
		b := a
		for b < end && k.tail.t[b] <= t {
			b++
		}
		k.log.appendFrom(&k.tail, a, b)
		a = b
		k.appendEntry(t, store.CountAt(counts, j), int32(gw))
	}
	k.log.appendFrom(&k.tail, a, end)
}

// insertFromBack merges gw's ascending stamps into the exact log in place:
// the log grows by their number and is filled from its end, each stamp
// after the live entries of its time.
func (k *Key) insertFromBack(gw int, stamps []int64, counts []int) {
	i := k.log.len() - 1 // the last entry not yet moved
	k.log.grow(len(stamps))
	w := k.log.len() - 1 // the place to fill
	// in locals: each push moves the entries the other gateways pushed
	// since, about K an admit
	lt, ln, lg, head := k.log.t, k.log.n, k.log.gw, k.head
	added, heavy := 0, 0
	for j := len(stamps) - 1; j >= 0; j-- {
		t, n := stamps[j], store.CountAt(counts, j)
		for ; i >= head && lt[i] > t; i, w = i-1, w-1 {
			lt[w], ln[w], lg[w] = lt[i], ln[i], lg[i]
		}
		lt[w], ln[w], lg[w] = t, n, int32(gw)
		w--
		added += n
		if n > 1 {
			heavy++
		}
	}
	k.own[gw] += added
	k.count += added
	k.heavy += heavy
}

// appendEntry appends e to the log, whose live entries are all at or before
// e.t. With counters it merges e into an entry of the same time (bucket) and
// gateway, so the log holds at most one entry a bucket and a gateway; the
// exact log keeps one entry an admit.
func (k *Key) appendEntry(t int64, n int, gw int32) {
	k.own[gw] += n
	k.count += n
	for i := k.log.len() - 1; k.spec.Counters() && i >= k.head && k.log.t[i] == t; i-- {
		if k.log.gw[i] == gw {
			if k.log.n[i] == 1 {
				k.heavy++
			}
			k.log.n[i] += n
			return
		}
	}
	if n > 1 {
		k.heavy++
	}
	k.log.add(t, n, gw)
}

// fresh returns the admits of p that this key has not applied yet: a
// retried push repeats admits the store has, and a push of an earlier epoch
// than the gateway's latest is an old retry, applied already.
func (k *Key) fresh(p *store.Push) ([]int64, []int) {
	gw := p.Gateway
	if p.Seq == 0 || len(p.Admits) == 0 {
		return p.Admits, p.Counts
	}
	switch {
	case p.Epoch < k.epoch[gw]:
		return nil, nil
	case p.Epoch > k.epoch[gw]:
		k.epoch[gw], k.applied[gw] = p.Epoch, 0
	}
	admits, counts := p.Admits, p.Counts
	if done := k.applied[gw]; done >= p.Seq {
		skip := min(done-p.Seq+1, uint64(len(admits)))
		admits = admits[skip:]
		if counts != nil {
			counts = counts[skip:]
		}
	}
	k.applied[gw] = max(k.applied[gw], p.Seq+uint64(len(p.Admits))-1)
	return admits, counts
}

// Sync applies one gateway's push at now and answers it: the pushed stamps
// join the log, the gateway's outstanding lease slots are settled (the used
// ones are now stamps, the rest come back), and a new grant of at most
// p.Ask slots is made without letting admitted plus granted pass the limit.
func (k *Key) Sync(now int64, p store.Push) store.Pull {
	var pull store.Pull
	k.SyncTo(now, &p, &pull)
	return pull
}

// SyncTo is Sync with the push and the pull passed by reference, which
// spares a simulator doing hundreds of millions of syncs the copies of
// both structs.
func (k *Key) SyncTo(now int64, p *store.Push, pull *store.Pull) {
	now = k.advance(now)
	k.gateway(p.Gateway)
	if r := p.Repair; r != nil {
		for _, w := range r.Withdraw {
			k.withdraw(p.Gateway, p.Epoch, w)
		}
	}
	stamps, counts := k.fresh(p)
	k.insert(p.Gateway, stamps, counts)
	if r := p.Repair; r != nil && len(r.Reseed) > 0 && k.newReseed(p.Gateway, p.Epoch, r.ReseedID) {
		k.insert(p.Gateway, r.Reseed, r.ReseedCounts)
	}
	held := k.out[p.Gateway] // settled now, and compared with the new grant below
	k.outTotal -= held
	k.out[p.Gateway] = 0
	for _, g := range p.Gone {
		if g >= 0 && g < len(k.out) && g != p.Gateway && k.out[g] != 0 {
			k.outTotal -= k.out[g]
			k.out[g] = 0
			k.lackVer++
		}
	}
	count := k.count
	*pull = store.Pull{Count: count, Own: k.own[p.Gateway]}
	ask := p.Ask
	if k.rates != nil { // a rate, not slots: nothing outstanding
		pull.Granted = int(k.rates.rateLease(p.Gateway, float64(k.limit), float64(ask)))
		ask = 0
	}
	if k.maxMin {
		k.demand[p.Gateway] = p.Ask
		ask = min(ask, k.fairShare(p.Gateway, k.limit-count))
	}
	if p.Spare > 0 && p.Refused > 0 {
		k.epochs(now)
		k.refusals[1] += p.Refused
	}
	if p.Spare > 0 && (k.rate[p.Gateway] != p.Rate || k.want[p.Gateway] != p.Ask) {
		k.rate[p.Gateway], k.want[p.Gateway] = p.Rate, p.Ask
		k.worth[p.Gateway] = slotworth.Appended(k.worth[p.Gateway][:0], p.Rate, p.Ask)
		k.lackVer++
	}
	if ask > 0 {
		pull.Granted = k.grant(p.Gateway, ask, count, p.Spare)
	}
	if k.out[p.Gateway] != held {
		k.lackVer++
	}
	pull.Outstanding, pull.Gen = k.outTotal, k.gen
	if p.Horizon > 0 {
		pull.Expiring, pull.ExpiringCounts = k.expiring(k.spec.Lo(now + p.Horizon))
	}
}

// expiring returns the live stamps before until and their counts (nil when
// each is 1), lent until the key's next call; with counters, one stamp a
// bucket, in the key's scratch.
func (k *Key) expiring(until int64) ([]int64, []int) {
	live := k.log.t[k.head:]
	j := k.head + sort.Search(len(live), func(i int) bool { return live[i] >= until })
	if !k.spec.Counters() {
		if k.heavy == 0 {
			return k.log.t[k.head:j:j], nil
		}
		return k.log.t[k.head:j:j], k.log.n[k.head:j:j]
	}
	k.exp, k.expN = k.exp[:0], k.expN[:0]
	heavy := false
	for i := k.head; i < j; i++ {
		t, n := k.log.t[i], k.log.n[i]
		if last := len(k.exp) - 1; last >= 0 && k.exp[last] == t {
			k.expN[last] += n
			heavy = true
			continue
		}
		k.exp = append(k.exp, t)
		k.expN = append(k.expN, n)
		heavy = heavy || n > 1
	}
	if !heavy {
		return k.exp, nil
	}
	return k.exp, k.expN
}

// grant gives gateway gw up to ask slots within the limit; with a spare,
// within the limit plus spare while the key is not contended, and none
// while it is.
func (k *Key) grant(gw, ask, count, spare int) int {
	avail := k.limit - count - k.outTotal
	if spare > 0 {
		avail += spare
	}
	return k.give(gw, ask, avail, spare, 0)
}

// give grants gateway gw up to ask of avail slots; with a spare, none
// while the key is contended (slots would only feed a flood: the central
// check decides), and ranked, gw's counted on from from.
func (k *Key) give(gw, ask, avail, spare, from int) int {
	if spare > 0 {
		if k.contendedAt(k.now, spare) {
			return 0
		}
		ask = k.ranked(gw, ask, avail, from)
	}
	if ask = min(ask, avail); ask <= 0 {
		return 0
	}
	k.out[gw] += ask
	k.outTotal += ask
	return ask
}

// Central is the central check: it admits n requests from gateway gw at
// now if the window then holds at most the limit (counting outstanding
// lease slots as used), logs them, and returns the count afterwards.
func (k *Key) Central(now int64, gw, n int) (bool, int) {
	return k.central(now, gw, n, 0, 0, 0)
}

// CentralSpare is Central with the window's admits within the limit and,
// with the outstanding slots, within the limit plus spare
// (store.Query.Spare); a refusal because the window was full marks the key
// contended for a window.
func (k *Key) CentralSpare(now int64, gw, n, spare int) (bool, int) {
	return k.central(now, gw, n, 0, 0, spare)
}

// contendedAt reports whether central checks with a spare were refused for
// a full window as many times as the spare within the last window or two.
func (k *Key) contendedAt(now int64, spare int) bool {
	k.epochs(now)
	return k.refusals[0]+k.refusals[1] >= Contended(spare)
}

// Contended is how many refusals for a full window, within the last one or
// two windows, mark a key contended at a spare: twice the spare, and at
// least 2. An honest client near its limit is refused a few times when its
// window fills; a flood of even 1.5 × L is refused a third of the time.
func Contended(spare int) int { return max(2*spare, 2) }

// ranked is how many of the ask slots of gateway gw to grant out of avail
// free ones, leaving those that other gateways asked for and do not hold
// while they are worth more: a gateway's k-th slot is worth the chance that
// k or more requests reach it in a sync interval, its arrivals being
// Poisson at its last Rate (slotworth.Of). Its g-th slot is granted when
// g and the slots worth more that others lack fit avail; that grows with g,
// so a binary search finds the most, each probe a binary search per
// gateway: a few hundred steps whatever the asks. The answer is kept until
// another gateway's slots, rate or want change (lackVer): most syncs of a
// quiet key find nothing changed but the gateway's own slots, settled and
// granted again.
func (k *Key) ranked(gw, ask, avail, from int) int {
	m := &k.rankMemo[gw]
	if m.valid && m.ver == k.lackVer && m.ask == ask && m.avail == avail && m.from == from {
		return m.got
	}
	got := k.rank(gw, ask, avail, from)
	*m = rankMemo{valid: true, ver: k.lackVer, ask: ask, avail: avail, from: from, got: got}
	return got
}

// rankMemo is a gateway's last ranked answer: got for ask and avail while
// the key's lackVer was ver.
type rankMemo struct {
	valid                 bool
	ver                   uint64
	ask, avail, from, got int
}

// rank is ranked without the memo.
func (k *Key) rank(gw, ask, avail, from int) int {
	lack := 0
	for j, want := range k.want {
		if j != gw {
			lack += max(want-k.out[j], 0)
		}
	}
	lo, hi := max(min(ask, avail-lack), 0), min(ask, avail) // lo slots fit whatever the others lack
	for lo < hi {
		g := (lo + hi + 1) / 2
		if g+k.claims(gw, k.slotWorth(gw, from+g)) <= avail {
			lo = g
		} else {
			hi = g - 1
		}
	}
	return lo
}

// claims is how many slots that other gateways asked for and do not hold
// are worth more than v to them (or as much, for a lower index than gw).
func (k *Key) claims(gw int, v float64) int {
	c := 0
	for j, want := range k.want {
		if j == gw || want <= k.out[j] {
			continue
		}
		lacking := k.worth[j][k.out[j]:want] // falling: count those that claim
		if len(lacking) > 8 {
			c += sort.Search(len(lacking), func(i int) bool {
				return lacking[i] < v || lacking[i] == v && j > gw
			})
			continue
		}
		for _, w := range lacking {
			if w < v || w == v && j > gw {
				break
			}
			c++
		}
	}
	return c
}

// slotWorth is slotworth.Of of gateway gw's g-th slot at its last rate.
func (k *Key) slotWorth(gw, g int) float64 {
	if g <= len(k.worth[gw]) {
		return k.worth[gw][g-1]
	}
	return slotworth.Of(k.rate[gw], g)
}

// epochs moves the refusal counts on to the window-long epoch that holds
// now (the epochs are the multiples of the window, as on Redis).
func (k *Key) epochs(now int64) {
	switch e := now / int64(k.spec.Size); e - k.refusalsOf {
	case 0:
	case 1:
		k.refusals, k.refusalsOf = [2]int{k.refusals[1], 0}, e
	default:
		k.refusals, k.refusalsOf = [2]int{}, e
	}
}

// fits reports whether n more requests fit the limit at the key's time,
// and, with the outstanding slots, the limit plus spare.
func (k *Key) fits(n, spare int) bool {
	return k.count+n <= k.limit && k.count+k.outTotal+n <= k.limit+spare
}

// refuse marks the key contended when a central check with a spare was
// refused because the window itself was full.
func (k *Key) refuse(n, spare int) {
	if spare > 0 && n > 0 && k.count+n > k.limit {
		k.epochs(k.now)
		k.refusals[1]++
	}
}

// central is Central for a query that names its admit (id > 0) for a later
// withdrawal.
func (k *Key) central(now int64, gw, n int, epoch, id uint64, spare int) (bool, int) {
	now = k.advance(now)
	k.gateway(gw)
	if k.Withdrawn(gw, epoch, id) {
		return false, k.count
	}
	count := k.count
	if !k.fits(n, spare) {
		k.refuse(n, spare)
		return false, count
	}
	if n > 0 {
		t := k.spec.Stamp(now)
		k.appendEntry(t, n, int32(gw))
		if id > 0 {
			k.lastCentral[gw] = centralAdmit{epoch: epoch, id: id, t: t, n: n}
		}
	}
	return true, count + n
}

// withdraw takes back gateway gw's central admit that w names, if this key
// logged it and it is still in the window.
func (k *Key) withdraw(gw int, epoch uint64, w store.Withdrawal) {
	c := k.lastCentral[gw]
	if c.id == 0 || c.id != w.ID || c.epoch != epoch {
		if b := &k.barred[gw]; b.epoch != epoch || b.id < w.ID {
			*b = centralAdmit{epoch: epoch, id: w.ID}
		}
		return
	}
	k.lastCentral[gw] = centralAdmit{}
	for i := k.log.len() - 1; i >= k.head && k.log.t[i] >= c.t; i-- {
		if k.log.t[i] != c.t || k.log.gw[i] != int32(gw) || k.log.n[i] < c.n {
			continue
		}
		before := k.log.n[i]
		k.log.n[i] -= c.n
		k.own[gw] -= c.n
		k.count -= c.n
		if before > 1 && k.log.n[i] <= 1 {
			k.heavy--
		}
		if k.log.n[i] == 0 {
			k.removeEntry(i)
		}
		return
	}
}

// Withdrawn reports whether gateway gw's query id of epoch was withdrawn
// before it reached the key: it must change nothing.
func (k *Key) Withdrawn(gw int, epoch, id uint64) bool {
	if id == 0 || gw >= len(k.barred) {
		return false
	}
	b := k.barred[gw]
	return b.epoch == epoch && id <= b.id
}

// removeEntry removes the log's entry i, which stands for no request.
func (k *Key) removeEntry(i int) {
	copy(k.log.t[i:], k.log.t[i+1:])
	copy(k.log.n[i:], k.log.n[i+1:])
	copy(k.log.gw[i:], k.log.gw[i+1:])
	k.log.truncate(k.log.len() - 1)
}

// Forget makes the key lose everything it holds, as a Redis restarted
// without persistence loses it, and starts a new life of it (Pull.Gen):
// the simulator's model of a store that forgets.
func (k *Key) Forget(now int64) {
	gen := k.gen + 1
	*k = Key{limit: k.limit, spec: k.spec, now: max(now, k.now), maxMin: k.maxMin, rates: k.rates, gen: gen}
}

// Answer answers a query of gateway gw at now, after applying the push it
// carries: the one place a query is dispatched to the store's operations.
func (k *Key) Answer(now int64, gw int, q store.Query) store.Answer {
	epoch, id := k.prepare(now, gw, q)
	switch q.Kind {
	case store.QueryCentral:
		ok, count := k.central(now, gw, q.N, epoch, id, int(q.Spare))
		a := store.Answer{Admit: ok, Count: count, Gen: k.gen}
		if ok && q.TopUp > 0 {
			a.Granted = k.topUp(gw, int(q.TopUp), int(q.Spare))
		}
		return a
	case store.QueryGrant:
		return store.Answer{Granted: k.GrantSpare(now, gw, q.N, int(q.Spare)), Gen: k.gen}
	case store.QueryCounter:
		return store.Answer{Count: k.Counter(now, q.N)}
	}
	return store.Answer{}
}

// prepare applies what query q of gateway gw carries (its push and its
// withdrawals) and returns the epoch and ID that name its central admit.
func (k *Key) prepare(now int64, gw int, q store.Query) (epoch, id uint64) {
	if q.Carry != nil {
		c := *q.Carry
		c.Ask, c.Horizon, c.WantOwn = 0, 0, false
		k.Sync(now, c)
	}
	if c := q.Call; c != nil {
		k.advance(now)
		k.gateway(gw)
		for _, w := range c.Withdraw {
			k.withdraw(gw, c.Epoch, w)
		}
		epoch, id = c.Epoch, c.ID
	}
	return epoch, id
}

// AnswerAll answers the queries qs of gateway gw at now on keys, the limits
// of one key, as one (store.MultiAsker): central checks admit all or none,
// counters add only when every one fits or on the ones passed, grants are
// answered each alone. A query of Kind 0 asks nothing of its key. It fills
// as, one answer per key.
func AnswerAll(keys []*Key, now int64, gw int, qs []store.Query, as []store.Answer) {
	all, fits := true, true
	for i, k := range keys {
		q := qs[i]
		if q.Kind == 0 {
			continue
		}
		epoch, id := k.prepare(now, gw, q)
		switch q.Kind {
		case store.QueryCentral:
			k.advance(now)
			k.gateway(gw)
			all = all && !k.Withdrawn(gw, epoch, id) && k.fits(q.N, int(q.Spare))
		case store.QueryCounter:
			fits = fits && k.Counter(now, 0)+q.N <= k.limit
		}
	}
	for i, k := range keys {
		q := qs[i]
		switch q.Kind {
		case store.QueryCentral:
			if all {
				var epoch, id uint64
				if c := q.Call; c != nil {
					epoch, id = c.Epoch, c.ID
				}
				ok, count := k.central(now, gw, q.N, epoch, id, int(q.Spare))
				as[i] = store.Answer{Admit: ok, Count: count, Gen: k.gen}
			} else {
				k.refuse(q.N, int(q.Spare))
				as[i] = store.Answer{Count: k.count, Gen: k.gen}
			}
		case store.QueryCounter:
			n := q.N
			if !fits && k.Counter(now, 0)+n <= k.limit {
				n = 0
			}
			as[i] = store.Answer{Count: k.Counter(now, n)}
		case store.QueryGrant:
			as[i] = store.Answer{Granted: k.GrantSpare(now, gw, q.N, int(q.Spare)), Gen: k.gen}
		}
	}
}

// Counter adds n to the key's counter for the fixed window that holds now
// (n = 0 reads it) and returns the count afterwards. The counter counts
// every request, within the limit or not; nothing else touches it.
func (k *Key) Counter(now int64, n int) int {
	if now < k.now {
		now = k.now
	}
	k.now = now
	if lo := (window.Spec{Size: k.spec.Size, Kind: window.Fixed}).Lo(now); lo != k.ctrStart {
		k.ctrStart, k.ctr = lo, 0
	}
	k.ctr += int64(n)
	return int(k.ctr)
}

// idle reports whether the key holds nothing at now: no admit in the
// window, no outstanding slot, no count in the current counter window.
func (k *Key) idle(now int64) bool {
	return k.Count(now) == 0 && k.outTotal == 0 && (k.ctr == 0 || now >= k.ctrStart+int64(k.spec.Size))
}

// Grant is a lease round trip: it grants gateway gw up to n more slots at
// now, as many as the limit allows, and returns how many.
func (k *Key) Grant(now int64, gw, n int) int {
	k.advance(now)
	k.gateway(gw)
	return k.roundTripGrant(gw, n, 0)
}

// GrantSpare is Grant lending up to spare slots beyond the limit while the
// key is not contended (store.Push.Spare).
func (k *Key) GrantSpare(now int64, gw, n, spare int) int {
	k.advance(now)
	k.gateway(gw)
	return k.roundTripGrant(gw, n, spare)
}

// topUp grants gateway gw up to n slots after its central admit, within
// the limit; with a spare, none while the key is contended, and ranked as
// a spare grant is, its slots counted on from those it holds
// (store.Query.TopUp).
func (k *Key) topUp(gw, n, spare int) int {
	avail := k.limit - k.count - k.outTotal
	if avail <= 0 {
		return 0
	}
	g := k.give(gw, n, avail, spare, k.out[gw])
	if g > 0 {
		k.lackVer++
	}
	return g
}

// roundTripGrant is grant outside a sync: new slots change what the
// others lack (lackVer).
func (k *Key) roundTripGrant(gw, n, spare int) int {
	g := k.grant(gw, n, k.count, spare)
	if g > 0 {
		k.lackVer++
	}
	return g
}
