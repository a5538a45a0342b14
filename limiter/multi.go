package limiter

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
)

// MaxLimits is the most limits one request is decided under (AllowLimits).
const MaxLimits = 8

// AllowLimits decides a request of cost n for key under several limits at
// once (10 a second and 250 a day, say): it is admitted only if every limit
// admits it, and counted against them only when it is, atomically on the
// store (one round trip for all of them when the design asks it). The
// Decision describes the limit that binds (Decision.Bound). Each limit
// counts apart, on a store key of its own (store.Key.Part), in an exact log:
// limits with Buckets, a store that is not a store.MultiAsker, more than
// MaxLimits limits, two alike and a cost below 1 are refused with an error,
// and nothing is counted. One limit is AllowLimit.
func (l *Limiter) AllowLimits(ctx context.Context, key string, lims []Limit, n int) (Decision, error) {
	if len(lims) == 1 {
		return l.AllowLimit(ctx, key, lims[0], n)
	}
	if err := l.validateLimits(lims); err != nil {
		return Decision{}, err
	}
	if n < 1 {
		return Decision{}, fmt.Errorf("limiter: cost %d: must be at least 1", n)
	}
	return l.allowMulti(ctx, l.keyName(key), lims, n)
}

// validateLimits reports what is wrong with the limits of AllowLimits.
func (l *Limiter) validateLimits(lims []Limit) error {
	switch {
	case len(lims) == 0:
		return errors.New("limiter: no limit given")
	case len(lims) > MaxLimits:
		return fmt.Errorf("limiter: %d limits on one key: at most %d", len(lims), MaxLimits)
	}
	if _, ok := l.st.(store.MultiAsker); !ok {
		return fmt.Errorf("limiter: the store (%T) cannot answer several limits on one key in one call (store.MultiAsker)", l.st)
	}
	for i, lim := range lims {
		if err := l.validate(lim); err != nil {
			return err
		}
		if lim.Buckets > 0 {
			return fmt.Errorf("limiter: limit %d per %v: several limits on one key count in exact logs; window buckets are not supported with them", lim.Requests, lim.Window)
		}
		if slices.Contains(lims[:i], lim) {
			return fmt.Errorf("limiter: limit %d per %v is given twice", lim.Requests, lim.Window)
		}
	}
	return nil
}

// allowMulti is AllowLimits once checked: each limit's entry, locked in
// the limits' order (so two requests for the key never wait on each other
// in a circle), decided together.
func (l *Limiter) allowMulti(ctx context.Context, key string, lims []Limit, n int) (Decision, error) {
	came := l.now()
	giveUp := came + int64(l.cfg.Timeout)
	es := make([]*entry, len(lims))
	for {
		for i, lim := range lims {
			es[i] = l.getPart(key, i+1, lim, came)
		}
		if d, ok, err := l.lockedMulti(ctx, es, giveUp, n); ok || err != nil {
			return d, err
		}
	}
}

// lockedMulti locks es and decides; false when one was evicted meanwhile
// (the caller gets them again).
func (l *Limiter) lockedMulti(ctx context.Context, es []*entry, giveUp int64, n int) (Decision, bool, error) {
	for _, e := range es {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.evicted {
			return Decision{}, false, nil
		}
	}
	if l.closed.Load() { // as in allow
		return Decision{}, false, ErrClosed
	}
	now := l.now()
	for i, e := range es {
		e.used = now
		if e.prime && !l.degraded.Load() {
			l.primeSync(ctx, e, now)
		}
		if e.learn && (l.decidesAlone() || l.degraded.Load()) {
			e.prime = l.decidesAlone()
			d := l.unlearned(e, now)
			d.Bound = i
			return d, true, nil
		}
	}
	return l.decideMulti(ctx, es, now, giveUp, n), true, nil
}

// decideMulti is decide for a key with several limits, es locked.
func (l *Limiter) decideMulti(ctx context.Context, es []*entry, now, giveUp int64, n int) Decision {
	parts := make([]design.Gateway, len(es))
	for i, e := range es {
		parts[i] = e.gw
	}
	m := design.NewMulti(parts)
	if l.degraded.Load() {
		l.stats.fallbacks.Add(1)
		ok := !l.cfg.FailClosed && m.Fallback(now, n) == design.Admit
		if ok {
			l.stats.fallbackAdmits.Add(1)
		}
		return l.multiDecision(es, m, ok, now, true)
	}
	v := m.Decide(now, n)
	if v == design.Ask {
		l.stats.roundTrips.Add(1)
		var end func(error)
		if l.cfg.StoreSpan != nil {
			end = l.cfg.StoreSpan(ctx)
		}
		as, err := l.askAll(ctx, es, now, giveUp, m.Queries())
		if end != nil {
			end(err)
		}
		if err != nil {
			return l.abandonMulti(ctx, es, m, now, n, err)
		}
		l.failRun.Store(0)
		v = m.Resume(now, n, as)
		for _, e := range es {
			e.learn = false
			l.checkForgot(e, now)
		}
	}
	return l.multiDecision(es, m, v == design.Admit, now, false)
}

// abandonMulti is abandon for a key with several limits.
func (l *Limiter) abandonMulti(ctx context.Context, es []*entry, m *design.Multi, now int64, n int, err error) Decision {
	l.stats.abandoned.Add(1)
	caller := ctx.Err() != nil
	if !caller {
		l.stats.storeErrors.Add(1)
		if l.failRun.Add(1) >= int64(l.cfg.FailAfter) {
			l.storeFailed(err)
		}
	}
	learning := false
	for _, e := range es {
		learning = learning || e.learn
	}
	v := m.Abandon(now, n, !caller && !l.cfg.FailClosed && !learning)
	l.stats.fallbacks.Add(1)
	if v == design.Admit {
		l.stats.fallbackAdmits.Add(1)
	}
	return l.multiDecision(es, m, v == design.Admit, now, true)
}

// multiDecision is the Decision of a verdict on a key with several limits:
// that of the limit that binds.
func (l *Limiter) multiDecision(es []*entry, m *design.Multi, ok bool, now int64, degraded bool) Decision {
	i, rem, reset := m.Binding(now, degraded)
	d := l.decision(es[i], ok, rem, reset, now, degraded)
	d.Bound = i
	return d
}

// askAll sends the queries qs of a decision on es (locked by the caller),
// one per limit, to the store in one call (store.MultiAsker), as ask does
// one query.
func (l *Limiter) askAll(ctx context.Context, es []*entry, now, giveUp int64, qs []store.Query) ([]store.Answer, error) {
	ma := l.st.(store.MultiAsker) // AllowLimits checked it
	items := make([]store.AskItem, len(es))
	for i, e := range es {
		items[i] = store.AskItem{Key: e.key, Query: qs[i]}
	}
	gw := es[0].index
	var err error
	switch at, patient, ok := l.callPlan(now, giveUp); {
	case l.inProc:
		cctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
		err = ma.AskAll(cctx, now, gw, items)
		cancel()
	case !ok:
		return nil, errTimedOut
	case !patient:
		cctx, cancel := context.WithDeadline(ctx, at)
		err = ma.AskAll(cctx, now, gw, items)
		cancel()
		l.noteSlow(ctx, err)
	default:
		for i := range items {
			items[i].Query = ownQuery(items[i].Query)
		}
		err = l.patiently(ctx, at, func(cctx context.Context) error { return ma.AskAll(cctx, now, gw, items) })
	}
	if err != nil {
		return nil, err // a patient call may still be writing items
	}
	as := make([]store.Answer, len(items))
	for i := range items {
		as[i] = items[i].Answer
	}
	return as, nil
}

// CheckLimits is Check under several limits: whether a request of cost 0
// for key is over any of lims, counting nothing. Its Decision describes
// the first limit that is over, or else the one with the least left
// (Decision.Bound). One limit is Check.
func (l *Limiter) CheckLimits(ctx context.Context, key string, lims []Limit) (Decision, error) {
	if len(lims) == 1 {
		return l.Check(ctx, key, lims[0])
	}
	if err := l.validateLimits(lims); err != nil {
		return Decision{}, err
	}
	key = l.keyName(key)
	if l.info.CheckOnly {
		return l.allowMulti(ctx, key, lims, 0)
	}
	var bind Decision
	for i, lim := range lims {
		d := l.view(partID{key, i + 1}, lim)
		d.Bound = i
		if !d.Allowed {
			return d, nil
		}
		if i == 0 || d.Remaining < bind.Remaining {
			bind = d
		}
	}
	return bind, nil
}
