package limiter

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
)

// entry is one key's state at this gateway.
type entry struct {
	mu  sync.Mutex
	key store.Key
	gw  design.Gateway
	// k and index are the fleet the design was made for: K and this
	// gateway's index
	k, index int
	used     int64 // last request, ns
	evicted  bool
	// prime is set on an entry that replaced one of the same key under
	// another limit, or one evicted less than a window ago: its design
	// knows nothing of the key yet, so its first request syncs it (with
	// the old entry's last push) before deciding.
	prime bool
	// learn is set on an entry made for a key evicted less than a window
	// ago: until the store has told it its count (a sync, or an answer),
	// it admits nothing alone, not even by the fallback (its state knows
	// nothing of the admits its window holds)
	learn  bool
	forgot int // the design's Forgotten() when last read
	// Keys are often created one after another, so their entries sit
	// side by side; without padding two goroutines on two keys write one
	// cache line and run at half speed (BenchmarkAllowParallel).
	_ [128]byte
}

// newEntry builds key's entry under a limit that Limit.validate accepted,
// with an epoch of its own.
func (l *Limiter) newEntry(key string, lim Limit) *entry {
	spec := l.specOf(lim)
	dc := l.designConfig(lim.Requests, spec)
	dc.Epoch, dc.Mend = nextEpoch(), true
	return &entry{key: store.Key{Name: key, Limit: lim.Requests, Window: spec}, gw: l.info.New(dc), k: dc.Gateways, index: dc.Gateway}
}

var lastEpoch atomic.Uint64

// nextEpoch returns an epoch larger than any this process has handed out
// and, as long as the wall clock does not step back across a restart,
// larger than any an earlier process of this gateway handed out: the wall
// clock in ns, or one more than the last epoch.
func nextEpoch() uint64 {
	for {
		last := lastEpoch.Load()
		e := max(uint64(time.Now().UnixNano()), last+1)
		if lastEpoch.CompareAndSwap(last, e) {
			return e
		}
	}
}

// matches reports whether e holds key under lim and the fleet f.
func (e *entry) matches(lim Limit, f *fleet) bool {
	return e.key.Limit == lim.Requests && e.key.Window.Size == lim.Window && e.key.Window.Buckets == lim.Buckets &&
		e.k == f.k && e.index == f.index
}

// get returns key's entry, creating it (or renewing it when its limit
// changed) as needed.
func (l *Limiter) get(key string, lim Limit, now int64) *entry {
	if v, ok := l.keys.Load(key); ok {
		if e := v.(*entry); e.matches(lim, l.fleet.Load()) {
			return e
		}
	}
	return l.create(key, 0, lim, now)
}

// partID is the name in Limiter.keys of a part of a key with several
// limits; a key with one is held under its name, a string, which no partID
// equals.
type partID struct {
	name string
	part int
}

// id is e's name in Limiter.keys.
func (e *entry) id() any { return entryID(e.key.Name, e.key.Part) }

// entryID is the name in Limiter.keys of key's part (0: a key with one
// limit).
func entryID(key string, part int) any {
	if part == 0 {
		return key
	}
	return partID{key, part}
}

// getPart is get for part part (from 1) of a key with several limits.
func (l *Limiter) getPart(key string, part int, lim Limit, now int64) *entry {
	if v, ok := l.keys.Load(partID{key, part}); ok {
		if e := v.(*entry); e.matches(lim, l.fleet.Load()) {
			return e
		}
	}
	return l.create(key, part, lim, now)
}

// create makes key's entry for part (0: the key's one limit) under lim, or
// returns the one another request made meanwhile.
func (l *Limiter) create(key string, part int, lim Limit, now int64) *entry {
	l.createMu.Lock()
	defer l.createMu.Unlock()
	var old *entry
	id := entryID(key, part)
	if v, ok := l.keys.Load(id); ok {
		if old = v.(*entry); old.matches(lim, l.fleet.Load()) {
			return old
		}
	}
	for old == nil && (l.nkeys.Load() >= int64(l.cfg.MaxKeys) || l.keyBytes.Load()+int64(len(key)) > int64(l.cfg.MaxKeyBytes)) {
		if !l.evictOne(now) {
			break
		}
	}
	ne := l.newEntry(key, lim)
	ne.key.Part = part
	if old != nil { // the limit or the fleet changed: push what the old state had
		l.retire(old, now)
		if h, ok := ne.gw.(design.Heir); ok { // and keep counting it in the local quota
			old.mu.Lock()
			h.Inherit(now, old.gw)
			old.mu.Unlock()
		}
		ne.prime = true
	} else {
		l.nkeys.Add(1)
		l.keyBytes.Add(int64(len(key)))
		if l.evicted.has(key) {
			// it must hear from the store before it decides alone: a
			// design that decides alone syncs first; one the store
			// decides for learns from its first answer, and meanwhile
			// does not fall back
			ne.learn, ne.prime = true, l.decidesAlone()
			l.stats.primed.Add(1)
		}
	}
	l.keys.Store(id, ne)
	return ne
}

// decidesAlone reports whether the design admits without asking the store
// (its view, its quota or its budget), so that a key made anew must learn
// the store's count first; the others ask the store or hold its slots.
func (l *Limiter) decidesAlone() bool { return !l.info.Central && !l.info.Leases }

// retire marks e evicted and keeps for the next sync a last push of its
// unsynced admits, withdrawals and re-seed, which also hands back any lease
// slots it holds (a push that asks for nothing). The caller holds createMu
// and not e's lock.
func (l *Limiter) retire(e *entry, now int64) {
	e.mu.Lock()
	e.evicted = true
	held := e.gw.Held()
	var p store.Push
	e.gw.SyncPush(now, &p)
	e.mu.Unlock()
	if len(p.Admits) > 0 || held > 0 || p.Repair != nil {
		last := store.Push{Gateway: p.Gateway, Admits: slices.Clone(p.Admits), Counts: slices.Clone(p.Counts), Seq: p.Seq, Epoch: p.Epoch,
			Repair: ownRepair(p.Repair)}
		l.orphans.add(store.SyncItem{Key: e.key, Push: last})
	}
}

// evictOne evicts the least recently used of a sample of keys, and reports
// whether there was one. The caller holds createMu.
func (l *Limiter) evictOne(now int64) bool {
	var victim *entry
	oldest, seen := int64(1<<63-1), 0
	l.keys.Range(func(_, v any) bool {
		e := v.(*entry)
		e.mu.Lock()
		u := e.used
		e.mu.Unlock()
		if u < oldest {
			victim, oldest = e, u
		}
		seen++
		return seen < 16
	})
	if victim == nil {
		return false
	}
	l.drop(victim, now)
	return true
}

// drop retires e and removes it, remembering that it was evicted. The
// caller holds createMu.
func (l *Limiter) drop(e *entry, now int64) {
	if l.keys.CompareAndDelete(e.id(), e) {
		l.retire(e, now)
		l.nkeys.Add(-1)
		l.keyBytes.Add(-int64(len(e.key.Name)))
		l.stats.evicted.Add(1)
		l.evicted.add(now, e.key.Name, e.key.Window.Size)
	}
}

// primeSync syncs a renewed or re-created entry (locked by the caller)
// before its first decision: the retired entry's last pushes for the key
// first, then the new design's, so that its view starts from the store's
// count, and a design that counts its own admits (design.Primer) learns how
// many the store holds. It gives up after the store timeout; the regular
// sync then catches up (a renewed entry decides meanwhile, one that must
// learn does not). The retired pushes stay queued for the regular sync
// too, which they cannot change twice.
func (l *Limiter) primeSync(ctx context.Context, e *entry, now int64) {
	e.prime = false
	items := append(l.orphans.of(e.key.Name), store.SyncItem{Key: e.key})
	last := &items[len(items)-1]
	e.gw.SyncPush(now, &last.Push)
	last.Push.WantOwn = true
	cctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	if err := l.st.Sync(cctx, now, items); err != nil {
		return
	}
	e.gw.SyncPull(now, &last.Pull)
	e.learn = false
	if p, ok := e.gw.(design.Primer); ok {
		p.Prime(now, last.Pull.Own)
	}
	l.checkForgot(e, now)
}
