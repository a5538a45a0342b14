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
	// Now is the clock, ns. By default the wall clock, read by a ticker
	// every ClockResolution into a value Allow reads for free (reading
	// the wall clock costs about 55 ns on a 2-core cloud VM, more than the
	// rest of a decision). Decisions then run on a clock that never goes
	// backwards and is at most one tick behind real time.
	Now func() int64
	// ClockResolution is the default clock's tick; default 1 ms; negative
	// reads the wall clock on every call instead.
	ClockResolution time.Duration
	Rand            *rand.Rand // for the sync phase; default a random one
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
	// At is the decision's instant on the Limiter's clock, ns.
	At int64
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

// Limiter enforces limits for one gateway. It is safe for concurrent use.
type Limiter struct {
	cfg      Config
	info     design.Info
	spec     window.Spec
	st       store.Backend
	keys     sync.Map   // key name -> *entry; lookups take no lock
	createMu sync.Mutex // serialises creating, renewing and evicting keys
	nkeys    atomic.Int64

	degraded atomic.Bool
	nextSync atomic.Int64
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
	clock  *coarseClock // nil when Config.Now was given
}

// coarseClock is the wall clock read by a ticker, never going backwards.
// Limiters of one process share one per resolution, so their decisions are
// on one clock.
type coarseClock struct {
	ns   atomic.Int64
	stop chan struct{}
	res  time.Duration
	refs int
}

var clocks struct {
	sync.Mutex
	m map[time.Duration]*coarseClock
}

// startClock returns the shared clock of that resolution, starting it.
func startClock(res time.Duration) *coarseClock {
	clocks.Lock()
	defer clocks.Unlock()
	if c := clocks.m[res]; c != nil {
		c.refs++
		return c
	}
	if clocks.m == nil {
		clocks.m = map[time.Duration]*coarseClock{}
	}
	c := &coarseClock{stop: make(chan struct{}), res: res, refs: 1}
	clocks.m[res] = c
	c.ns.Store(time.Now().UnixNano())
	go func() {
		t := time.NewTicker(res)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				if now := time.Now().UnixNano(); now > c.ns.Load() {
					c.ns.Store(now)
				}
			}
		}
	}()
	return c
}

func (c *coarseClock) now() int64 { return c.ns.Load() }

// release stops the clock when its last Limiter closes.
func (c *coarseClock) release() {
	clocks.Lock()
	defer clocks.Unlock()
	if c.refs--; c.refs == 0 {
		close(c.stop)
		delete(clocks.m, c.res)
	}
}

// entry is one key's state at this gateway.
type entry struct {
	mu      sync.Mutex
	key     store.Key
	gw      design.Gateway
	own     *window.Log // this gateway's admits in the window up to the quota, for the fallback
	quota   int         // ceil(L/K)
	used    int64       // last request, ns
	evicted bool
	// Keys are often created one after another, so their entries sit
	// side by side; without padding two goroutines on two keys write one
	// cache line and run at half speed (BenchmarkAllowParallel).
	_ [128]byte
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
	var clk *coarseClock
	if cfg.Now == nil {
		def(&cfg.ClockResolution, time.Millisecond)
		if cfg.ClockResolution < 0 {
			cfg.Now = func() int64 { return time.Now().UnixNano() }
		} else {
			clk = startClock(cfg.ClockResolution)
			cfg.Now = clk.now
		}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	l := &Limiter{cfg: cfg, info: info, spec: dc.Window, st: cfg.Store,
		stop: make(chan struct{}), done: make(chan struct{}), clock: clk}
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
			// The store may have applied the call before failing to
			// answer: admitting this request by the fallback could
			// count it twice. Reject it; the next requests fall back.
			l.stats.fallbacks.Add(1)
			return l.decision(e, false, 0, 0, now, true)
		}
		d = e.gw.Resume(now, n, q, a)
	}
	if d == design.Admit {
		e.own.Add(now, n)
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
		e.own.Add(now, n)
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
	d := Decision{Allowed: ok, Limit: e.key.Limit, Remaining: rem, Reset: time.Duration(reset - now), Degraded: degraded, At: now}
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
	quota := (limit + l.cfg.Gateways - 1) / l.cfg.Gateways
	return &entry{
		key:   store.Key{Name: key, Limit: limit, Window: spec},
		gw:    l.info.New(dc),
		own:   window.New(spec, quota), // own admits, counted up to the quota
		quota: quota,
	}, nil
}

// get returns key's entry, creating it (or renewing it when its limit
// changed) as needed.
func (l *Limiter) get(key string, limit int, w time.Duration, now int64) *entry {
	if v, ok := l.keys.Load(key); ok {
		if e := v.(*entry); e.key.Limit == limit && e.key.Window.Size == w {
			return e
		}
	}
	return l.create(key, limit, w, now)
}

func (l *Limiter) create(key string, limit int, w time.Duration, now int64) *entry {
	l.createMu.Lock()
	defer l.createMu.Unlock()
	var old *entry
	if v, ok := l.keys.Load(key); ok {
		if old = v.(*entry); old.key.Limit == limit && old.key.Window.Size == w {
			return old
		}
	}
	if old == nil && l.nkeys.Load() >= int64(l.cfg.MaxKeys) {
		l.evictOne(now)
	}
	if limit < 1 || w <= 0 {
		limit, w = max(limit, 1), max(w, time.Second)
	}
	ne, err := l.newEntry(key, limit, w)
	if err != nil { // unreachable: New validated the shared settings
		panic(err)
	}
	if old != nil { // the limit changed: push what the old state had
		l.retire(old, now)
	} else {
		l.nkeys.Add(1)
	}
	l.keys.Store(key, ne)
	return ne
}

// retire marks e evicted and keeps for the next sync a last push of its
// unsynced admits, which also hands back any lease slots it holds (a push
// that asks for nothing). The caller holds createMu and not e's lock.
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

// evictOne evicts the least recently used of a sample of keys. The caller
// holds createMu.
func (l *Limiter) evictOne(now int64) {
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
	if victim != nil {
		l.drop(victim, now)
	}
}

// drop retires e and removes it. The caller holds createMu.
func (l *Limiter) drop(e *entry, now int64) {
	if l.keys.CompareAndDelete(e.key.Name, e) {
		l.retire(e, now)
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
