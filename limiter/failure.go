package limiter

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/internal/giveup"
	"github.com/fleetlimit/fleetlimit/store"
)

// storeFailed marks the Limiter degraded: every request falls back at once
// until two syncs in a row succeed. It says so once per change of state.
func (l *Limiter) storeFailed(err error) {
	l.recovering.Store(false)
	if !l.degraded.Swap(true) {
		mode := "the fallback decides from the count the store last reported"
		if l.cfg.FailClosed {
			mode = "rejecting every request (fail-closed)"
		}
		l.cfg.Logger.Warn("fleetlimit: store unreachable; "+mode, "error", err, "gateway", l.fleet.Load().index)
	}
}

// storeOK ends the degraded state at the second successful sync in a row:
// the first pushes this gateway's fallback admits, and the other gateways
// push theirs within a sync interval (sooner, as they try again within
// degradedRetry); until then the store's count lacks them, and this
// gateway still falls back, from the count the first sync brought.
func (l *Limiter) storeOK() {
	l.failRun.Store(0)
	if !l.degraded.Load() || !l.recovering.Swap(true) {
		return
	}
	l.recovering.Store(false)
	if l.degraded.Swap(false) {
		l.cfg.Logger.Info("fleetlimit: store reachable again; syncing resumed", "gateway", l.fleet.Load().index)
	}
}

// checkForgot counts, after a pull or an answer for e (locked by the
// caller), whether the store turned out to have forgotten the key: its
// design then re-seeds it at the next sync.
func (l *Limiter) checkForgot(e *entry, now int64) bool {
	f, ok := e.gw.(design.Forgetful)
	if !ok {
		return false
	}
	n := f.Forgotten()
	if n == e.forgot {
		return false
	}
	e.forgot = n
	l.stats.forgotten.Add(1)
	l.forgetLog.note(l, e.key.Name)
	return true
}

// forgetLog says that the store forgot keys: one line at the first, then
// at most one a minute with how many more.
type forgetLog struct {
	mu    sync.Mutex
	last  time.Time
	since int64
}

func (f *forgetLog) note(l *Limiter, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.since++
	if time.Since(f.last) < time.Minute {
		return
	}
	l.cfg.Logger.Error("fleetlimit: the store lost keys' windows (a restart without persistence, FLUSHALL or an eviction?); this gateway pushes its own admits of the window again",
		"keys", f.since, "first", key, "gateway", l.fleet.Load().index)
	f.last, f.since = time.Now(), 0
}

// errTimedOut is the error of a store call that did not answer within
// Config.Timeout.
var errTimedOut = errors.New("limiter: the store did not answer within the timeout")

// ask sends q for e (locked by the caller), decided at now, to the store
// and waits for the answer until giveUp (ns on the Limiter's clock); the
// store is told that instant and applies nothing after it, so that no
// admit lands later than Timeout after its request came. A store in this
// process (memstore) answers at once. A remote one is called from the
// request's goroutine; but for slowPeriod after a call that did not answer
// in time, from a goroutine that, when the request gives up, goes on
// waiting for the answer up to SyncTimeout: a connection that times out is
// dropped, and under a steady delay every new one's handshake, a round
// trip, made the next call time out too. (The goroutine costs a decision
// about 20 µs more on loopback, docs/performance.md, so it is kept for
// when the store is slow.) A request whose time is already up when the key
// is free sends nothing.
func (l *Limiter) ask(ctx context.Context, e *entry, now, giveUp int64, q store.Query) (store.Answer, error) {
	if l.inProc {
		cctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
		defer cancel()
		return l.st.Ask(cctx, now, e.key, e.index, q)
	}
	at, patient, ok := l.callPlan(now, giveUp)
	switch {
	case !ok:
		return store.Answer{}, errTimedOut
	case !patient:
		cctx, cancel := context.WithDeadline(ctx, at)
		defer cancel()
		a, err := l.st.Ask(cctx, now, e.key, e.index, q)
		l.noteSlow(ctx, err)
		return a, err
	}
	var a store.Answer
	key, gw, q := e.key, e.index, ownQuery(q)
	if err := l.patiently(ctx, at, func(cctx context.Context) (err error) {
		a, err = l.st.Ask(cctx, now, key, gw, q)
		return err
	}); err != nil {
		return store.Answer{}, err // the call may still be writing a
	}
	return a, nil
}

// callPlan says how a call of a request decided at now that gives up at
// giveUp (ns on the Limiter's clock) runs: the instant it gives up on the
// wall clock, whether from a goroutine (patient), and false when its time
// is already up.
func (l *Limiter) callPlan(now, giveUp int64) (at time.Time, patient, ok bool) {
	wait := time.Duration(giveUp - now)
	if wait <= 0 {
		return time.Time{}, false, false
	}
	at = time.Now().Add(wait)
	if l.wall {
		at = time.Unix(0, giveUp)
	}
	return at, time.Now().UnixNano() < l.slowUntil.Load(), true
}

// noteSlow starts the patient period after a call that did not answer in
// time while its caller still waited.
func (l *Limiter) noteSlow(ctx context.Context, err error) {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		l.slowUntil.Store(time.Now().Add(slowPeriod).UnixNano())
	}
}

// slowPeriod is how long after a call that did not answer in time the
// calls of requests wait for their answers in the background.
const slowPeriod = 10 * time.Second

// patiently runs call, which works on its own copies of what it sends, from
// a goroutine that outlives the request: the
// request waits until at, the call up to SyncTimeout. After an error the
// call may still be running: the caller must not read what it writes.
func (l *Limiter) patiently(ctx context.Context, at time.Time, call func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(l.cfg.SyncTimeout, l.cfg.Timeout))
	cctx = giveup.With(cctx, at)
	ch := make(chan error, 1)
	go func() {
		defer cancel()
		ch <- call(cctx)
	}()
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case err := <-ch:
		return err
	case <-t.C:
		l.slowUntil.Store(time.Now().Add(slowPeriod).UnixNano())
		return errTimedOut
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ownQuery copies what q only lends: its call and carried push.
func ownQuery(q store.Query) store.Query {
	if c := q.Call; c != nil {
		cp := *c
		cp.Withdraw = slices.Clone(c.Withdraw)
		q.Call = &cp
	}
	if c := q.Carry; c != nil {
		cp := *c
		cp.Admits, cp.Counts, cp.Repair = slices.Clone(c.Admits), slices.Clone(c.Counts), ownRepair(c.Repair)
		q.Carry = &cp
	}
	return q
}

// ownRepair copies r (nil: nil).
func ownRepair(r *store.Repair) *store.Repair {
	if r == nil {
		return nil
	}
	return &store.Repair{Withdraw: slices.Clone(r.Withdraw), Reseed: slices.Clone(r.Reseed),
		ReseedCounts: slices.Clone(r.ReseedCounts), ReseedID: r.ReseedID}
}
