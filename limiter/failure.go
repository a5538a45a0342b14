package limiter

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
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
// and waits for the answer until giveUp (ns on the Limiter's clock). A
// store in this process (memstore) answers at once. A remote one is called
// from a goroutine that, when the request gives up, goes on waiting for the
// answer up to SyncTimeout, so that a slow store's connection survives a
// late answer (a new one costs another round trip, and under a steady delay
// every call would then time out); the store is told the instant the
// request gives up and applies nothing after it, so that no admit lands
// later than Timeout after its request came. A request whose time is
// already up when the key is free sends nothing. The goroutine works on its
// own copy of q.
func (l *Limiter) ask(ctx context.Context, e *entry, now, giveUp int64, q store.Query) (store.Answer, error) {
	if l.inProc {
		cctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
		defer cancel()
		return l.st.Ask(cctx, now, e.key, e.index, q)
	}
	wait := time.Duration(giveUp - now)
	if wait <= 0 {
		return store.Answer{}, errTimedOut
	}
	at := time.Now().Add(wait)
	if l.wall {
		at = time.Unix(0, giveUp)
	}
	type result struct {
		a   store.Answer
		err error
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(l.cfg.SyncTimeout, l.cfg.Timeout))
	cctx = store.WithGiveUp(cctx, at)
	ch := make(chan result, 1)
	key, gw, q := e.key, e.index, ownQuery(q)
	go func() {
		defer cancel()
		a, err := l.st.Ask(cctx, now, key, gw, q)
		ch <- result{a, err}
	}()
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case r := <-ch:
		return r.a, r.err
	case <-t.C:
		return store.Answer{}, errTimedOut
	case <-ctx.Done():
		return store.Answer{}, ctx.Err()
	}
}

// ownQuery copies what q only lends: its carried push and withdrawals.
func ownQuery(q store.Query) store.Query {
	q.Withdraw = slices.Clone(q.Withdraw)
	if c := q.Carry; c != nil {
		cp := *c
		cp.Admits, cp.Counts = slices.Clone(c.Admits), slices.Clone(c.Counts)
		cp.Withdraw, cp.Reseed, cp.ReseedCounts = slices.Clone(c.Withdraw), slices.Clone(c.Reseed), slices.Clone(c.ReseedCounts)
		q.Carry = &cp
	}
	return q
}
