// Package limiter is fleetlimit's live limiter: one gateway process that
// enforces per-key limits with any design, on the real clock, against the
// embedded store or Redis. It runs the very designs the simulator runs.
//
// A Limiter holds many keys, created on demand and evicted when idle, and a
// background loop that syncs them all with the store every Δ in one batch.
// Allow never waits longer than the store timeout. A request whose store
// call did not answer in time is decided by its design's fallback, which
// continues from the count the store last reported (or, with FailClosed,
// rejected), and whatever the call may have done at the store is withdrawn
// at the next contact; after a failed sync, or FailAfter failed calls in a
// row, the Limiter is degraded and every request falls back at once, until
// a sync succeeds again. A store found to have forgotten a key is given
// this gateway's admits of the window again. It must never block a request
// on a sync, nor count an admit twice, nor leave at the store an admit its
// client was told was rejected.
package limiter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// Config configures a Limiter. The zero value of each field means its
// default.
type Config struct {
	Design     string        // coordination design; default design.Default (permit)
	Limit      int           // L, requests per window per key; default 100
	Window     time.Duration // W; default 1 minute
	WindowKind window.Kind   // sliding (default) or fixed
	// WindowBuckets, when > 0, counts each window of Allow and AllowN in
	// that many counters instead of the exact log of admits
	// (window.Spec.Buckets): memory per key independent of the limit and
	// of the requests' costs, at the price of counting an admit up to one
	// bucket longer. A fixed window takes 0 or 1.
	WindowBuckets int
	Sync          time.Duration // Δ, the sync interval; default 1 s
	Gateways      int           // K, the gateways in the fleet; default 1
	Gateway       int           // this gateway's index in [0, K), unique in the fleet
	// Membership learns K and this gateway's index from the store (a
	// store.Membership: Redis) instead of Gateways and Gateway: the
	// gateway joins Fleet, renews its membership every ClaimTTL/3, and
	// K follows the members that renew (see Fleet).
	Membership bool
	Store      store.Backend // the central store; default a new memstore
	// Timeout bounds each store call made while a request waits
	// (central check, lease grant); default 50 ms. A request whose call
	// did not answer in time is decided by the fallback.
	Timeout time.Duration
	// FailAfter is how many such calls must fail in a row before the
	// Limiter goes degraded and stops making requests wait on the store
	// (a failed sync does it at once); default 3. One slow answer is not
	// an outage.
	FailAfter int
	// SyncTimeout bounds each background sync batch, and how long a call
	// a request gave up on may still wait for its answer in the background
	// (so that a slow store's connection is not dropped with every late
	// answer); default 500 ms.
	SyncTimeout time.Duration
	// CloseTimeout bounds Close's final flush of every key, batch by
	// batch (each within SyncTimeout); default 10 s.
	CloseTimeout time.Duration
	// FailClosed rejects every request the store does not decide, instead
	// of falling back.
	FailClosed bool
	// MaxKeys bounds the keys held; default 100,000. Past it the least
	// recently used of a sample of keys is evicted (its unsynced admits
	// are still pushed), and remembered: a key evicted less than a window
	// ago syncs with the store before it decides again.
	MaxKeys int
	// Tombstones bounds the evicted keys remembered per window; default
	// 10 × MaxKeys (a Bloom filter, about 1.2 bytes a tombstone, two of
	// them). Past it, the oldest are forgotten sooner.
	Tombstones int
	// MaxKeyBytes bounds the bytes of the key names held together; past
	// it keys are evicted as past MaxKeys. Default 64 MiB.
	MaxKeyBytes int
	// MaxKeyLen is the longest key name held as it is; a longer one is
	// held, and sent to the store, as its SHA-256 ("sha256:" and 64 hex
	// digits), so that a client's huge key costs no more than a short
	// one. Default 16 KiB.
	MaxKeyLen int
	// IdleAfter is how long a key may go unused before it is evicted;
	// default 2 W.
	IdleAfter time.Duration
	// SyncBatch is the most keys sent in one store call; default 1,000.
	SyncBatch int
	Logger    *slog.Logger // default slog.Default()
	// Now is the clock; a test's, say. By default the wall clock, read by
	// a ticker every millisecond into a value Allow reads for free
	// (reading the wall clock costs about 55 ns on a 2-core cloud VM, more
	// than the rest of a decision): decisions then run on a clock that
	// never goes backwards and is at most a millisecond behind real time.
	Now func() time.Time
	// ClaimTTL is how long this gateway's claim of its index on a shared
	// store (store.Claimer: Redis) lasts unless renewed, which it is every
	// third of it; default 10 s. A process that finds its index held by
	// another live one waits up to ClaimTTL for it to expire (a crashed
	// holder's does), then refuses to start; a claim that times out (a
	// slow store) is tried again within the same ClaimTTL.
	ClaimTTL time.Duration
	// Instance names this process in its claim; default host:pid:random.
	Instance string
	// Fleet names the fleet whose indexes the claims are of; default
	// "default". Fleets that share a store need names of their own.
	Fleet string
	// StoreSpan, when set, is called as a decision starts a store round
	// trip, with the request's context; what it returns is called with the
	// call's error when the round trip ends. A tracer's span, for example;
	// nil costs nothing.
	StoreSpan func(ctx context.Context) (end func(error))
}

// DefaultDesign is the design a zero Config runs: permit, the one the
// study recommends for a fleet of unknown size (its worst window is
// L + ⌊0.1 L⌋ whatever the number of gateways).
const DefaultDesign = design.Default

// Designs returns the names of the designs a Limiter runs, DefaultDesign
// first.
func Designs() []string { return design.Names() }

// lookup finds a design by name (tests add watched variants).
var lookup = design.Lookup

// Limit is a per-key limit that overrides the Limiter's default.
type Limit struct {
	Requests int           // L, at least 1
	Window   time.Duration // W, positive
	// Buckets, when > 0, counts the window in that many counters instead
	// of the exact log (see Config.WindowBuckets).
	Buckets int
}

// Decision is the answer to one request.
type Decision struct {
	Allowed bool
	// Limit is the key's L, and Window its W.
	Limit  int
	Window time.Duration
	// Remaining is how many more requests this gateway would admit now,
	// as it sees the key.
	Remaining int
	// Reset is how long until this gateway's view frees budget.
	Reset time.Duration
	// RetryAfter, when not Allowed, is how long to wait before trying again.
	RetryAfter time.Duration
	// Degraded is true when the fallback decided: the store was
	// unreachable, or did not answer this request in time.
	Degraded bool
	// At is the decision's instant on the Limiter's clock.
	At time.Time
	// Bound, for a request under several limits (AllowLimits), is the
	// index of the limit that Limit, Window, Remaining and Reset describe:
	// the one that refused the request, or else the one with the least
	// left. 0 under one limit.
	Bound int
}

// Stats are a Limiter's counters.
type Stats struct {
	Keys          int           // keys held
	KeyBytes      int64         // the bytes of their names
	Syncs         int64         // sync batches that succeeded
	StoreErrors   int64         // store calls that failed or timed out
	Fallbacks     int64         // requests decided by the fallback
	Abandoned     int64         // store calls a request gave up on (timed out or failed); what they did is withdrawn
	Forgotten     int64         // keys found forgotten by the store (its data lost) and re-seeded
	Primed        int64         // keys evicted and wanted again within a window, which learn the store's count before deciding alone
	Degraded      bool          // the store is unreachable now
	LastSync      time.Duration // duration of the last sync
	LastSyncKeys  int           // keys in the last sync
	Evicted       int64         // keys evicted
	FallbackAdmit int64         // requests admitted by the fallback
	RoundTrips    int64         // decisions that waited on the store
	// ClaimLost is true while another process holds this gateway's index
	// on the shared store.
	ClaimLost bool
}

// Limiter enforces limits for one gateway. It is safe for concurrent use.
type Limiter struct {
	cfg      Config
	info     design.Info
	spec     window.Spec
	st       store.Backend
	inProc   bool         // st answers in this process, at once (memstore)
	now      func() int64 // the clock, Unix ns
	wall     bool         // now is the wall clock
	keys     sync.Map     // key name -> *entry; lookups take no lock
	createMu sync.Mutex   // serialises creating, renewing and evicting keys
	nkeys    atomic.Int64
	keyBytes atomic.Int64 // the bytes of the names of the keys held

	degraded   atomic.Bool
	recovering atomic.Bool  // degraded, and one sync has succeeded since
	failRun    atomic.Int64 // request-path calls failed in a row
	slowUntil  atomic.Int64 // wall clock ns: until then, calls of requests wait for late answers in the background
	nextSync   atomic.Int64
	stats      struct {
		syncs, storeErrors, fallbacks, fallbackAdmits, evicted, roundTrips atomic.Int64
		abandoned, forgotten, primed                                       atomic.Int64
		lastSync                                                           atomic.Int64
		lastKeys                                                           atomic.Int64
	}
	forgetLog forgetLog  // says, once a minute at most, that the store forgot keys
	evicted   tombstones // keys evicted lately; guarded by createMu

	mu      sync.Mutex // serialises syncs
	orphans orphans    // retired entries' last pushes

	onSync atomic.Pointer[func(time.Duration, error)]

	stop      chan struct{}
	done      chan struct{}
	claimStop chan struct{} // ends the claim's renewal; nil without a claim
	claimDone chan struct{} // closed when it has ended
	claimLost atomic.Bool
	// fleet is K and this gateway's index now; fleetChanges counts their
	// changes
	fleet        atomic.Pointer[fleet]
	fleetChanges atomic.Int64
	seen         map[int]bool // members ever seen live; the heartbeat's alone
	closed       atomic.Bool
	clock        *coarseClock // nil when Config.Now was given
}

// withDefaults fills in c's defaults and checks it.
func (c Config) withDefaults() (Config, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	if c.Design == "" {
		c.Design = design.Default
	}
	if c.Fleet == "" {
		c.Fleet = "default"
	}
	defInt(&c.Limit, 100)
	defInt(&c.Gateways, 1)
	defInt(&c.MaxKeys, 100_000)
	defInt(&c.FailAfter, 3)
	defInt(&c.Tombstones, 10*c.MaxKeys)
	defInt(&c.MaxKeyBytes, 64<<20)
	defInt(&c.MaxKeyLen, 16<<10)
	defInt(&c.SyncBatch, 1000)
	def(&c.Window, time.Minute)
	def(&c.Sync, time.Second)
	def(&c.Timeout, 50*time.Millisecond)
	def(&c.SyncTimeout, 500*time.Millisecond)
	def(&c.IdleAfter, 2*c.Window)
	def(&c.CloseTimeout, 10*time.Second)
	def(&c.ClaimTTL, 10*time.Second)
	switch {
	case c.Membership && (c.Gateways != 1 || c.Gateway != 0):
		return c, errors.New("limiter: with Membership the store gives K and the gateway's index: leave Gateways and Gateway unset")
	case !c.Membership && (c.Gateway < 0 || c.Gateway >= c.Gateways):
		return c, fmt.Errorf("limiter: gateway index %d: must be in [0, %d)", c.Gateway, c.Gateways)
	case c.Timeout < 0 || c.SyncTimeout < 0 || c.IdleAfter < 0 || c.CloseTimeout < 0 || c.ClaimTTL < 0:
		return c, errors.New("limiter: timeouts must be positive")
	case c.MaxKeys < 1 || c.SyncBatch < 1 || c.FailAfter < 1 || c.Tombstones < 1:
		return c, errors.New("limiter: MaxKeys, SyncBatch, FailAfter and Tombstones must be at least 1")
	case c.MaxKeyLen < 71 || c.MaxKeyBytes < c.MaxKeyLen:
		return c, errors.New("limiter: MaxKeyLen must be at least 71 (a hashed key's length), and MaxKeyBytes at least MaxKeyLen")
	}
	return c, nil
}

// designConfig is the design's configuration for one key's limit.
func (l *Limiter) designConfig(limit int, spec window.Spec) design.Config {
	f := l.fleet.Load()
	return design.Config{Limit: limit, Window: spec, Gateways: f.k, Gateway: f.index, Sync: l.cfg.Sync}
}

// New starts a Limiter and its sync loop. Close stops it.
func New(cfg Config) (*Limiter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	info, err := lookup(cfg.Design)
	if err != nil {
		return nil, err
	}
	l := &Limiter{cfg: cfg, info: info, spec: window.Spec{Size: cfg.Window, Kind: cfg.WindowKind, Buckets: cfg.WindowBuckets},
		stop: make(chan struct{}), done: make(chan struct{}), evicted: newTombstones(cfg.Tombstones)}
	l.fleet.Store(&fleet{k: cfg.Gateways, index: cfg.Gateway})
	if err := l.spec.Validate(); err != nil {
		return nil, fmt.Errorf("limiter: %w", err)
	}
	if err := l.designConfig(cfg.Limit, l.spec).Validate(); err != nil {
		return nil, fmt.Errorf("limiter: %w", err)
	}
	if info.FixedWindow && cfg.WindowKind != window.Fixed {
		return nil, fmt.Errorf("limiter: design %s counts in fixed windows only: set WindowKind to fixed", cfg.Design)
	}
	if l.cfg.Store == nil {
		l.cfg.Store = memstore.New()
	}
	l.st = l.cfg.Store
	_, l.inProc = l.st.(*memstore.Store)
	if info.Spare && l.spec.Counters() && !l.inProc {
		return nil, fmt.Errorf("limiter: design %s lends slots beyond the limit, which a shared store tracks on the exact log only: leave WindowBuckets at 0", cfg.Design)
	}
	if l.cfg.Logger == nil {
		l.cfg.Logger = slog.Default()
	}
	if info.Caveat != "" {
		l.cfg.Logger.Warn("fleetlimit: design " + cfg.Design + " " + info.Caveat)
	}
	if info.FineBuckets && l.spec.Counters() && l.spec.Width() > int64(cfg.Sync)/2 {
		l.cfg.Logger.Warn("fleetlimit: this design sizes its local admits from the room its view shows; with buckets wider than half the sync interval floods get through (up to 1.35 L in the study): use more buckets",
			"design", cfg.Design, "bucket", time.Duration(l.spec.Width()), "sync", cfg.Sync, "buckets at least", 2*int64(cfg.Window)/int64(cfg.Sync))
	}
	if now := l.cfg.Now; now != nil {
		l.now = func() int64 { return now().UnixNano() }
	} else {
		l.clock = startClock(time.Millisecond)
		l.now = l.clock.now
		l.wall = true
	}
	if err := l.claim(); err != nil {
		if l.clock != nil {
			l.clock.release()
		}
		return nil, err
	}
	phase := time.Duration(rand.Int64N(int64(l.cfg.Sync)))
	l.nextSync.Store(l.now() + int64(phase))
	go l.loop(phase)
	return l, nil
}

// Allow decides one request for key under the default limit. Its only
// error is ErrClosed.
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	return l.allow(ctx, key, Limit{l.cfg.Limit, l.cfg.Window, l.cfg.WindowBuckets}, 1)
}

// ErrClosed is the error of a decision asked of a Limiter that Close has
// begun to close: its final flush may have passed the key already, so an
// admit now would never reach the store. Nothing is counted. A decision
// already under way when Close begins ends normally and is flushed.
var ErrClosed = errors.New("limiter: closed")

// keyName is the name key is held under: itself, or its SHA-256 when it is
// longer than MaxKeyLen.
func (l *Limiter) keyName(key string) string {
	if len(key) <= l.cfg.MaxKeyLen {
		return key
	}
	return hashedKey(key)
}

// hashedKey is a long key's name: its SHA-256. (Apart from keyName, which
// stays small enough to inline on the request path.)
func hashedKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// AllowN decides a request of cost n for key under the default limit. A
// cost below 1 is refused with an error.
func (l *Limiter) AllowN(ctx context.Context, key string, n int) (Decision, error) {
	return l.AllowLimit(ctx, key, Limit{l.cfg.Limit, l.cfg.Window, l.cfg.WindowBuckets}, n)
}

// AllowLimit decides a request of cost n for key under its own limit. A
// limit below 1 request, a window that is not positive or a cost below 1 is
// refused with an error, and nothing is counted.
func (l *Limiter) AllowLimit(ctx context.Context, key string, lim Limit, n int) (Decision, error) {
	if err := l.validate(lim); err != nil {
		return Decision{}, err
	}
	if n < 1 {
		return Decision{}, fmt.Errorf("limiter: cost %d: must be at least 1", n)
	}
	return l.allow(ctx, key, lim, n)
}

// Now is the Limiter's clock: the clock of Decision.At.
func (l *Limiter) Now() time.Time { return time.Unix(0, l.now()) }

// Check answers whether key is over lim without counting anything, for a
// request of cost 0 (envoyproxy/ratelimit's "check only"). A design that
// counts in the store, rejected requests too (central-counter), asks it and
// is over once the count has passed the limit, as upstream. The others never
// count past the limit, so for them a check is over once nothing is left:
// Allowed is Remaining > 0, from what this gateway knows; a key it has not
// seen is not created.
func (l *Limiter) Check(ctx context.Context, key string, lim Limit) (Decision, error) {
	if err := l.validate(lim); err != nil {
		return Decision{}, err
	}
	key = l.keyName(key)
	if l.info.CheckOnly {
		return l.allow(ctx, key, lim, 0)
	}
	return l.view(key, lim), nil
}

// view answers a check of the entry held under id (entryID) from what this
// gateway knows; a key it has not seen is not created.
func (l *Limiter) view(id any, lim Limit) Decision {
	now := l.now()
	v, ok := l.keys.Load(id)
	if !ok {
		reset := now // sliding: nothing to free
		if spec := (window.Spec{Size: lim.Window, Kind: l.spec.Kind}); spec.Kind == window.Fixed {
			reset = spec.Lo(now) + int64(lim.Window)
		}
		return Decision{Allowed: true, Limit: lim.Requests, Window: lim.Window, Remaining: lim.Requests, Reset: time.Duration(reset - now), At: time.Unix(0, now)}
	}
	e := v.(*entry)
	e.mu.Lock()
	defer e.mu.Unlock()
	rem, reset := e.gw.View(now, l.degraded.Load())
	return l.decision(e, rem > 0, rem, reset, now, l.degraded.Load())
}

// validate reports what is wrong with a per-key limit.
func (l *Limiter) validate(lim Limit) error {
	switch {
	case lim.Requests < 1:
		return fmt.Errorf("limiter: limit of %d requests: must be at least 1", lim.Requests)
	case lim.Window <= 0:
		return fmt.Errorf("limiter: limit window %v: must be positive", lim.Window)
	}
	if err := l.specOf(lim).Validate(); err != nil {
		return fmt.Errorf("limiter: limit %d per %v: %w", lim.Requests, lim.Window, err)
	}
	return nil
}

// specOf is the window of a limit.
func (l *Limiter) specOf(lim Limit) window.Spec {
	return window.Spec{Size: lim.Window, Kind: l.cfg.WindowKind, Buckets: lim.Buckets}
}

func (l *Limiter) allow(ctx context.Context, key string, lim Limit, n int) (Decision, error) {
	key = l.keyName(key) // here, not in Allow, which stays small enough to inline; a hashed key's name is its own
	// The request gives up on the store Timeout after it came, whatever
	// it waited for meanwhile (the key, held by another request's call):
	// a request never waits much longer than Timeout.
	came := l.now()
	giveUp := came + int64(l.cfg.Timeout)
	for {
		e := l.get(key, lim, came)
		e.mu.Lock()
		if e.evicted {
			e.mu.Unlock()
			continue
		}
		if l.closed.Load() { // under e.mu: Close's flush of e is either to come, and sees what this decides, or past
			e.mu.Unlock()
			return Decision{}, ErrClosed
		}
		now := l.now()
		e.used = now
		if e.prime && !l.degraded.Load() {
			l.primeSync(ctx, e, now)
		}
		if e.learn && (l.decidesAlone() || l.degraded.Load()) { // evicted lately, and the store could not tell it its count
			e.prime = l.decidesAlone()
			e.mu.Unlock()
			return l.unlearned(e, now), nil
		}
		d := l.decide(ctx, e, now, giveUp, n)
		e.mu.Unlock()
		return d, nil
	}
}

// decide runs the design for one request of e, which the caller has
// locked: decide, ask the store if told to, resume; or, while the store is
// unreachable, the design's fallback. A call that did not answer by giveUp
// (ns on the Limiter's clock) is abandoned: the design withdraws what it
// may have done and falls back.
func (l *Limiter) decide(ctx context.Context, e *entry, now, giveUp int64, n int) Decision {
	if l.degraded.Load() {
		return l.fallback(e, now, n)
	}
	v, q := e.gw.Decide(now, n)
	if v == design.Ask {
		l.stats.roundTrips.Add(1)
		var end func(error)
		if l.cfg.StoreSpan != nil {
			end = l.cfg.StoreSpan(ctx)
		}
		a, err := l.ask(ctx, e, now, giveUp, q)
		if end != nil {
			end(err)
		}
		if err != nil {
			return l.abandon(ctx, e, now, n, q, err)
		}
		l.failRun.Store(0)
		v = e.gw.Resume(now, n, q, a)
		e.learn = false
		l.checkForgot(e, now)
	}
	rem, reset := e.gw.View(now, false)
	return l.decision(e, v == design.Admit, rem, reset, now, false)
}

// abandon decides a request whose store call failed with err: the design
// takes back what the call may have done and falls back (unless the caller
// gave up, or FailClosed). Calls that fail FailAfter times in a row make
// the Limiter degraded.
func (l *Limiter) abandon(ctx context.Context, e *entry, now int64, n int, q store.Query, err error) Decision {
	l.stats.abandoned.Add(1)
	caller := ctx.Err() != nil // the caller gave up, not the store
	if !caller {
		l.stats.storeErrors.Add(1)
		if l.failRun.Add(1) >= int64(l.cfg.FailAfter) {
			l.storeFailed(err)
		}
	}
	fall := !caller && !l.cfg.FailClosed && !e.learn
	v := e.gw.Abandon(now, n, q, fall)
	l.stats.fallbacks.Add(1)
	if v == design.Admit {
		l.stats.fallbackAdmits.Add(1)
	}
	rem, reset := e.gw.View(now, true)
	return l.decision(e, v == design.Admit, rem, reset, now, true)
}

// fallback decides while the store is unreachable: the design's fallback,
// or nothing at all with FailClosed.
func (l *Limiter) fallback(e *entry, now int64, n int) Decision {
	l.stats.fallbacks.Add(1)
	ok := !l.cfg.FailClosed && e.gw.Fallback(now, n) == design.Admit
	if ok {
		l.stats.fallbackAdmits.Add(1)
	}
	rem, reset := e.gw.View(now, true)
	return l.decision(e, ok, rem, reset, now, true)
}

// unlearned rejects a request for a key evicted less than a window ago
// whose state has not heard from the store yet: it cannot tell how much of
// its window is used, and must not admit more than it could have before.
func (l *Limiter) unlearned(e *entry, now int64) Decision {
	l.stats.fallbacks.Add(1)
	return l.decision(e, false, 0, 0, now, true)
}

// decision is the Decision of a verdict and a view. When the view cannot
// tell when budget frees (reset <= now), Reset is the latest it can be: the
// end of a fixed window, or a whole sliding window from now, when every
// admit counted now has left it. (It was once the next sync, which told
// clients to retry long before anything could free.)
func (l *Limiter) decision(e *entry, ok bool, rem int, reset, now int64, degraded bool) Decision {
	if reset <= now {
		w := e.key.Window
		if reset = now + int64(w.Size); w.Kind == window.Fixed {
			reset = w.Lo(now) + int64(w.Size)
		}
	}
	d := Decision{Allowed: ok, Limit: e.key.Limit, Window: e.key.Window.Size, Remaining: rem, Reset: time.Duration(reset - now), Degraded: degraded, At: time.Unix(0, now)}
	if !ok {
		d.RetryAfter = max(d.Reset, time.Millisecond)
	}
	return d
}

// OnSync sets a function called after every sync with its duration and
// error (for a metric); nil stops the calls. It must not block.
func (l *Limiter) OnSync(f func(time.Duration, error)) {
	if f == nil {
		l.onSync.Store(nil)
		return
	}
	l.onSync.Store(&f)
}

// Stats returns the Limiter's counters.
func (l *Limiter) Stats() Stats {
	return Stats{
		Keys:          int(l.nkeys.Load()),
		KeyBytes:      l.keyBytes.Load(),
		Syncs:         l.stats.syncs.Load(),
		StoreErrors:   l.stats.storeErrors.Load(),
		Fallbacks:     l.stats.fallbacks.Load(),
		Abandoned:     l.stats.abandoned.Load(),
		Forgotten:     l.stats.forgotten.Load(),
		Primed:        l.stats.primed.Load(),
		FallbackAdmit: l.stats.fallbackAdmits.Load(),
		Degraded:      l.degraded.Load(),
		LastSync:      time.Duration(l.stats.lastSync.Load()),
		LastSyncKeys:  int(l.stats.lastKeys.Load()),
		ClaimLost:     l.claimLost.Load(),
		Evicted:       l.stats.evicted.Load(),
		RoundTrips:    l.stats.roundTrips.Load(),
	}
}

// Config returns the Limiter's configuration, defaults filled in.
func (l *Limiter) Config() Config { return l.cfg }

// WindowBuckets is Config.WindowBuckets, for a caller that builds its Limits
// per request without copying the whole Config.
func (l *Limiter) WindowBuckets() int { return l.cfg.WindowBuckets }
