// Package limiter is fleetlimit's live limiter: one gateway process that
// enforces per-key limits with any design, on the real clock, against the
// embedded store or Redis. It runs the very designs the simulator runs.
//
// A Limiter holds many keys, created on demand and evicted when idle, and a
// background loop that syncs them all with the store every Δ in one batch.
// When the store cannot be reached, Allow never waits longer than the
// store timeout: it falls back to the split design's local quota (or, with
// FailClosed, rejects) until a sync succeeds again. It must never block a
// request on a sync, nor count an admit twice.
package limiter

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// Config configures a Limiter. The zero value of each field means its
// default.
type Config struct {
	Design     string        // coordination design; default "shared-counter"
	Limit      int           // L, requests per window per key; default 100
	Window     time.Duration // W; default 1 minute
	WindowKind window.Kind   // sliding (default) or fixed
	Sync       time.Duration // Δ, the sync interval; default 1 s
	Gateways   int           // K, the gateways in the fleet; default 1
	Gateway    int           // this gateway's index in [0, K), unique in the fleet
	Store      store.Backend // the central store; default a new memstore
	// Timeout bounds each store call made while a request waits
	// (central check, lease grant); default 50 ms.
	Timeout time.Duration
	// SyncTimeout bounds each background sync batch; default 500 ms or
	// Δ, whichever is less.
	SyncTimeout time.Duration
	// FailClosed rejects every request while the store is unreachable,
	// instead of falling back to the local quota ceil(L/K).
	FailClosed bool
	// MaxKeys bounds the keys held; default 100,000. Past it the least
	// recently used of a sample of keys is evicted (its unsynced admits
	// are still pushed).
	MaxKeys int
	// IdleAfter is how long a key may go unused before it is evicted;
	// default 2 W.
	IdleAfter time.Duration
	// SyncBatch is the most keys sent in one store call; default 1,000.
	SyncBatch int
	Logger    *slog.Logger // default slog.Default()
	Now       func() int64 // the clock, ns; default the wall clock
	Rand      *rand.Rand   // for the sync phase; default a random one
}

// Limit is a per-key limit that overrides the Limiter's default.
type Limit struct {
	Requests int
	Window   time.Duration
}

// Decision is the answer to one request.
type Decision struct {
	Allowed bool
	// Limit is the key's L.
	Limit int
	// Remaining is how many more requests this gateway would admit now,
	// as it sees the key.
	Remaining int
	// Reset is how long until this gateway's view frees budget.
	Reset time.Duration
	// RetryAfter, when not Allowed, is how long to wait before trying again.
	RetryAfter time.Duration
	// Degraded is true when the store was unreachable and the fallback
	// decided.
	Degraded bool
}

// Stats are a Limiter's counters.
type Stats struct {
	Keys          int           // keys held
	Syncs         int64         // sync batches that succeeded
	StoreErrors   int64         // store calls that failed or timed out
	Fallbacks     int64         // requests decided by the fallback
	Degraded      bool          // the store is unreachable now
	LastSync      time.Duration // duration of the last sync
	LastSyncKeys  int           // keys in the last sync
	Evicted       int64         // keys evicted
	FallbackAdmit int64         // requests admitted by the fallback
}

const shards = 64

// Limiter enforces limits for one gateway. It is safe for concurrent use.
type Limiter struct {
	cfg   Config
	info  design.Info
	spec  window.Spec
	st    store.Backend
	seed  maphash.Seed
	shard [shards]shard
	nkeys atomic.Int64

	degraded atomic.Bool
	nextSync atomic.Int64
	evictAt  atomic.Int64 // shard to start the next eviction at
	stats    struct {
		syncs, storeErrors, fallbacks, fallbackAdmits, evicted atomic.Int64
		lastSync                                               atomic.Int64
		lastKeys                                               atomic.Int64
	}

	mu       sync.Mutex // serialises syncs
	orphanMu sync.Mutex // guards orphans; never held while taking another lock
	orphans  []store.SyncItem

	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool
}

type shard struct {
	mu sync.RWMutex
	m  map[string]*entry
}

// entry is one key's state at this gateway.
type entry struct {
	mu      sync.Mutex
	key     store.Key
	gw      design.Gateway
	own     *window.Log // this gateway's admits in the window, for the fallback
	quota   int         // ceil(L/K)
	used    int64       // last request, ns
	evicted bool
}

// New starts a Limiter and its sync loop. Close stops it.
func New(cfg Config) (*Limiter, error) {
	if cfg.Design == "" {
		cfg.Design = "shared-counter"
	}
	info, err := design.Lookup(cfg.Design)
	if err != nil {
		return nil, err
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if cfg.Limit == 0 {
		cfg.Limit = 100
	}
	if cfg.Gateways == 0 {
		cfg.Gateways = 1
	}
	def(&cfg.Window, time.Minute)
	def(&cfg.Sync, time.Second)
	def(&cfg.Timeout, 50*time.Millisecond)
	def(&cfg.SyncTimeout, min(500*time.Millisecond, cfg.Sync))
	def(&cfg.IdleAfter, 2*cfg.Window)
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = 100_000
	}
	if cfg.SyncBatch == 0 {
		cfg.SyncBatch = 1000
	}
	switch {
	case cfg.Timeout < 0 || cfg.SyncTimeout < 0 || cfg.IdleAfter < 0:
		return nil, errors.New("limiter: timeouts must be positive")
	case cfg.MaxKeys < 1 || cfg.SyncBatch < 1:
		return nil, errors.New("limiter: MaxKeys and SyncBatch must be at least 1")
	}
	dc := design.Config{Limit: cfg.Limit, Window: window.Spec{Size: cfg.Window, Kind: cfg.WindowKind},
		Gateways: cfg.Gateways, Gateway: cfg.Gateway, Sync: cfg.Sync}
	if err := dc.Validate(); err != nil {
		return nil, fmt.Errorf("limiter: %w", err)
	}
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = func() int64 { return time.Now().UnixNano() }
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	l := &Limiter{cfg: cfg, info: info, spec: dc.Window, st: cfg.Store, seed: maphash.MakeSeed(),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i := range l.shard {
		l.shard[i].m = map[string]*entry{}
	}
	phase := time.Duration(cfg.Rand.Int64N(int64(cfg.Sync)))
	l.nextSync.Store(cfg.Now() + int64(phase))
	go l.loop(phase)
	return l, nil
}

// Allow decides one request for key.
func (l *Limiter) Allow(ctx context.Context, key string) Decision { return l.AllowN(ctx, key, 1) }

// AllowN decides a request of cost n for key under the default limit.
func (l *Limiter) AllowN(ctx context.Context, key string, n int) Decision {
	return l.allow(ctx, key, l.cfg.Limit, l.cfg.Window, n)
}

// AllowLimit decides a request of cost n for key under its own limit.
func (l *Limiter) AllowLimit(ctx context.Context, key string, lim Limit, n int) Decision {
	return l.allow(ctx, key, lim.Requests, lim.Window, n)
}

func (l *Limiter) allow(ctx context.Context, key string, limit int, w time.Duration, n int) Decision {
	if n < 1 {
		n = 1
	}
	for {
		now := l.cfg.Now()
		e := l.get(key, limit, w, now)
		e.mu.Lock()
		if e.evicted {
			e.mu.Unlock()
			continue
		}
		e.used = now
		d := l.decide(ctx, e, now, n)
		e.mu.Unlock()
		return d
	}
}

func (l *Limiter) decide(ctx context.Context, e *entry, now int64, n int) Decision {
	if l.degraded.Load() {
		return l.fallback(e, now, n)
	}
	d, q := e.gw.Decide(now, n)
	if d == design.Ask {
		var a design.Answer
		var err error
		cctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
		switch q.Kind {
		case design.QueryCentral:
			a.Admit, a.Count, err = l.st.Central(cctx, now, e.key, l.cfg.Gateway, q.N)
		case design.QueryGrant:
			a.Granted, err = l.st.Grant(cctx, now, e.key, l.cfg.Gateway, q.N)
		}
		cancel()
		if err != nil {
			if ctx.Err() == nil { // the store failed, not the caller
				l.storeFailed(err)
			}
			return l.fallback(e, now, n)
		}
		d = e.gw.Resume(now, n, q, a)
	}
	if d == design.Admit {
		e.own.Allow(now, n)
	}
	rem, reset := e.gw.View(now)
	return l.decision(e, d == design.Admit, rem, reset, now, false)
}

// fallback decides while the store is unreachable: the split design's
// local quota, ceil(L/K) per window counting this gateway's own admits, or
// nothing at all with FailClosed.
func (l *Limiter) fallback(e *entry, now int64, n int) Decision {
	l.stats.fallbacks.Add(1)
	used := e.own.Count(now)
	ok := !l.cfg.FailClosed && used+n <= e.quota
	if ok {
		e.own.Allow(now, n)
		e.gw.Record(now, n)
		l.stats.fallbackAdmits.Add(1)
		used += n
	}
	var reset int64
	if oldest, has := e.own.Oldest(); has {
		reset = e.key.Window.Reset(now, oldest)
	}
	return l.decision(e, ok, max(e.quota-used, 0), reset, now, true)
}

func (l *Limiter) decision(e *entry, ok bool, rem int, reset, now int64, degraded bool) Decision {
	if reset <= now {
		if reset = l.nextSync.Load(); reset <= now {
			reset = now
		}
	}
	d := Decision{Allowed: ok, Limit: e.key.Limit, Remaining: rem, Reset: time.Duration(reset - now), Degraded: degraded}
	if !ok {
		d.RetryAfter = max(d.Reset, time.Millisecond)
	}
	return d
}

func (l *Limiter) newEntry(key string, limit int, w time.Duration) (*entry, error) {
	spec := window.Spec{Size: w, Kind: l.cfg.WindowKind}
	dc := design.Config{Limit: limit, Window: spec, Gateways: l.cfg.Gateways, Gateway: l.cfg.Gateway, Sync: l.cfg.Sync}
	if err := dc.Validate(); err != nil {
		return nil, err
	}
	return &entry{
		key:   store.Key{Name: key, Limit: limit, Window: spec},
		gw:    l.info.New(dc),
		own:   window.New(spec, limit),
		quota: (limit + l.cfg.Gateways - 1) / l.cfg.Gateways,
	}, nil
}

// get returns key's entry, creating it (or renewing it when its limit
// changed) as needed.
func (l *Limiter) get(key string, limit int, w time.Duration, now int64) *entry {
	s := &l.shard[hashShard(l, key)]
	s.mu.RLock()
	e := s.m[key]
	s.mu.RUnlock()
	if e != nil && e.key.Limit == limit && e.key.Window.Size == w {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e = s.m[key]; e != nil && e.key.Limit == limit && e.key.Window.Size == w {
		return e
	}
	if e == nil && l.nkeys.Load() >= int64(l.cfg.MaxKeys) {
		// Make room first, taking one shard's lock at a time.
		s.mu.Unlock()
		l.evictSome(now)
		s.mu.Lock()
		if e = s.m[key]; e != nil && e.key.Limit == limit && e.key.Window.Size == w {
			return e
		}
	}
	if limit < 1 || w <= 0 {
		limit, w = max(limit, 1), max(w, time.Second)
	}
	ne, err := l.newEntry(key, limit, w)
	if err != nil { // unreachable: New validated the shared settings
		panic(err)
	}
	if e != nil { // the limit changed: push what the old state had
		l.retire(e, now)
	} else {
		l.nkeys.Add(1)
	}
	s.m[key] = ne
	return ne
}

// evictSome evicts keys until there is room for one more, looking at the
// shards in turn. Concurrent creators may pass MaxKeys by at most their
// number, for a moment.
func (l *Limiter) evictSome(now int64) {
	start := int(l.evictAt.Add(1))
	for i := 0; i < shards && l.nkeys.Load() >= int64(l.cfg.MaxKeys); i++ {
		s := &l.shard[(start+i)%shards]
		s.mu.Lock()
		if len(s.m) > 0 {
			l.evictOne(s, now)
		}
		s.mu.Unlock()
	}
}

// retire marks e evicted and keeps for the next sync a last push of its
// unsynced admits, which also hands back any lease slots it holds (a push
// that asks for nothing). The caller holds e's shard lock and not e's.
func (l *Limiter) retire(e *entry, now int64) {
	e.mu.Lock()
	e.evicted = true
	held := e.gw.Held()
	p := e.gw.SyncPush(now)
	e.mu.Unlock()
	if len(p.Admits) > 0 || held > 0 {
		last := store.Push{Gateway: p.Gateway, Admits: append([]int64(nil), p.Admits...), Seq: p.Seq}
		l.orphanMu.Lock()
		l.orphans = append(l.orphans, store.SyncItem{Key: e.key, Push: last})
		l.orphanMu.Unlock()
	}
}

// evictOne evicts the least recently used of a few keys of shard s, whose
// lock the caller holds.
func (l *Limiter) evictOne(s *shard, now int64) {
	var victim string
	var oldest int64 = 1<<63 - 1
	i := 0
	for k, e := range s.m {
		e.mu.Lock()
		u := e.used
		e.mu.Unlock()
		if u < oldest {
			victim, oldest = k, u
		}
		if i++; i == 8 {
			break
		}
	}
	if e := s.m[victim]; e != nil {
		l.retire(e, now)
		delete(s.m, victim)
		l.nkeys.Add(-1)
		l.stats.evicted.Add(1)
	}
}

func (l *Limiter) storeFailed(err error) {
	l.stats.storeErrors.Add(1)
	if !l.degraded.Swap(true) {
		mode := "falling back to the local quota ceil(L/K)"
		if l.cfg.FailClosed {
			mode = "rejecting every request (fail-closed)"
		}
		l.cfg.Logger.Warn("fleetlimit: store unreachable; "+mode, "error", err, "gateway", l.cfg.Gateway)
	}
}

func (l *Limiter) storeOK() {
	if l.degraded.Swap(false) {
		l.cfg.Logger.Info("fleetlimit: store reachable again; syncing resumed", "gateway", l.cfg.Gateway)
	}
}

// Stats returns the Limiter's counters.
func (l *Limiter) Stats() Stats {
	return Stats{
		Keys:          int(l.nkeys.Load()),
		Syncs:         l.stats.syncs.Load(),
		StoreErrors:   l.stats.storeErrors.Load(),
		Fallbacks:     l.stats.fallbacks.Load(),
		FallbackAdmit: l.stats.fallbackAdmits.Load(),
		Degraded:      l.degraded.Load(),
		LastSync:      time.Duration(l.stats.lastSync.Load()),
		LastSyncKeys:  int(l.stats.lastKeys.Load()),
		Evicted:       l.stats.evicted.Load(),
	}
}

// Config returns the Limiter's configuration, defaults filled in.
func (l *Limiter) Config() Config { return l.cfg }

func hashShard(l *Limiter, key string) uint64 { return maphash.String(l.seed, key) % shards }
