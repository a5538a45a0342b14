package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
)

// degradedRetry is the longest a degraded Limiter waits before it tries
// the store again, whatever Δ.
const degradedRetry = 250 * time.Millisecond

func (l *Limiter) loop(phase time.Duration) {
	defer close(l.done)
	// a sync in progress when Close comes is cut short: Close's own sync
	// pushes what it had left
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTimer(phase)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.nextSync.Store(l.now() + int64(l.cfg.Sync))
		start := time.Now()
		_ = l.SyncNow(ctx)
		next := l.cfg.Sync
		if l.degraded.Load() { // try again soon: one late answer must not cost Δ of fallback
			next = min(next, degradedRetry)
		}
		t.Reset(max(next-time.Since(start), 0))
	}
}

// SyncNow syncs every key with the store at once, in batches, and evicts
// keys idle for IdleAfter. Keys whose design declares the sync quiet
// (design.Lazy: nothing to push, no view to refresh, no slots held) are left
// out. The background loop calls it every Δ; Close calls it once more.
func (l *Limiter) SyncNow(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := time.Now()
	err := l.syncNow(ctx, start)
	if f := l.onSync.Load(); f != nil {
		(*f)(time.Since(start), err)
	}
	return err
}

func (l *Limiter) syncNow(ctx context.Context, start time.Time) error {
	now := l.now()
	all := make([]*entry, 0, l.nkeys.Load())
	l.keys.Range(func(_, v any) bool {
		all = append(all, v.(*entry))
		return true
	})
	sent, err := l.sendOrphans(ctx, now)
	keys, forgot := 0, []*entry(nil)
	if err == nil {
		var n int
		n, keys, forgot, err = l.syncKeys(ctx, all, nil)
		sent += n
	}
	if err == nil && sent == 0 {
		err = l.pingIfIdle(ctx)
	}
	if err != nil {
		if ctx.Err() == nil { // the store failed, not the caller (Close)
			l.stats.storeErrors.Add(1)
			l.storeFailed(err)
		}
		return fmt.Errorf("limiter: sync stopped after %d items: %w", sent, err)
	}
	l.storeOK()
	l.stats.syncs.Add(1)
	l.stats.lastSync.Store(int64(time.Since(start)))
	l.stats.lastKeys.Store(int64(keys))
	l.evictIdle(all, now)
	l.reseed(ctx, forgot)
	return nil
}

// sendOrphans delivers the last pushes of retired entries, batch by batch,
// before any live key's: a key re-created since pushes with a later epoch,
// and a store ignores earlier epochs' pushes once it has seen a later one.
// It returns how many it delivered.
func (l *Limiter) sendOrphans(ctx context.Context, now int64) (int, error) {
	items := l.orphans.all()
	for lo := 0; lo < len(items); lo += l.cfg.SyncBatch {
		hi := min(lo+l.cfg.SyncBatch, len(items))
		if err := l.send(ctx, now, items[lo:hi]); err != nil {
			l.orphans.drop(lo)
			return lo, err
		}
	}
	l.orphans.drop(len(items))
	return len(items), nil
}

// syncKeys syncs the entries of all that need it a batch at a time: each
// batch is pushed just before it is sent and pulled as soon as it answers,
// so that a key is in a sync (where its design may send its requests to
// the store) only while its own batch is out, not while the whole fleet
// of keys is. It returns the items sent, the entries synced, and forgot
// with the entries the store turned out to have forgotten appended.
func (l *Limiter) syncKeys(ctx context.Context, all, forgot []*entry) (sent, synced int, _ []*entry, err error) {
	for len(all) > 0 {
		now := l.now()
		var ents []*entry
		var items []store.SyncItem
		ents, items, all = l.pushes(all, now, l.cfg.SyncBatch)
		if len(items) == 0 {
			continue
		}
		if err := l.send(ctx, now, items); err != nil {
			return sent, synced, forgot, err
		}
		sent += len(items)
		synced += len(ents)
		forgot = l.pull(ents, items, now, forgot)
	}
	return sent, synced, forgot, nil
}

// send is one store call, within SyncTimeout.
func (l *Limiter) send(ctx context.Context, now int64, items []store.SyncItem) error {
	cctx, cancel := context.WithTimeout(ctx, l.cfg.SyncTimeout)
	defer cancel()
	return l.st.Sync(cctx, now, items)
}

// reseed syncs at once the keys a sync found forgotten by the store, so
// that their designs push their admits of the window again within this
// sync rather than the next; if the store fails, the next sync pushes them.
func (l *Limiter) reseed(ctx context.Context, forgot []*entry) {
	if len(forgot) > 0 {
		_, _, _, _ = l.syncKeys(ctx, forgot, nil)
	}
}

// pingIfIdle pings the store when a sync has nothing to send, so that the
// degraded state follows the store even while no key needs it.
func (l *Limiter) pingIfIdle(ctx context.Context) error {
	p, ok := l.st.(store.Pinger)
	if !ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, l.cfg.SyncTimeout)
	defer cancel()
	return p.Ping(cctx)
}

// pushes starts the sync of the first entries of all that need one, up to
// most of them, and returns those entries, an item per entry in the same
// order, and the entries not looked at yet.
func (l *Limiter) pushes(all []*entry, now int64, most int) ([]*entry, []store.SyncItem, []*entry) {
	var ents []*entry
	var items []store.SyncItem
	gone := l.fleet.Load().gone
	i := 0
	for ; i < len(all) && len(items) < most; i++ {
		e := all[i]
		e.mu.Lock()
		if e.evicted {
			e.mu.Unlock()
			continue
		}
		if quietSync(e.gw) {
			e.gw.(lazy).Skip(1)
		} else {
			ents = append(ents, e)
			items = append(items, store.SyncItem{Key: e.key})
			it := &items[len(items)-1]
			e.gw.SyncPush(now, &it.Push)
			it.Push.Gone = gone
		}
		e.mu.Unlock()
	}
	return ents, items, all[i:]
}

// lazy is implemented by designs whose syncs can be left out, exactly,
// while they would change nothing: QuietSyncs counts the next syncs that
// would change nothing (0 when the next one matters), Skip accounts for
// syncs left out, and PullsView says a sync refreshes the view even when
// quiet.
type lazy interface {
	QuietSyncs() int
	Skip(n int)
	PullsView() bool
}

// quietSync reports whether gw's next sync may be left out: its design says it
// would change nothing, its view does not come from the pull, and it holds
// no lease slots (which the store must keep hearing of, or its copy of the
// key could expire under them).
func quietSync(gw design.Gateway) bool {
	lz, ok := gw.(lazy)
	return ok && lz.QuietSyncs() > 0 && !lz.PullsView() && gw.Held() == 0
}

// pull hands the store's answers to their entries, items[i] being
// ents[i]'s, and returns forgot with the entries the store turned out to
// have forgotten appended.
func (l *Limiter) pull(ents []*entry, items []store.SyncItem, now int64, forgot []*entry) []*entry {
	for i, e := range ents {
		e.mu.Lock()
		if !e.evicted {
			e.gw.SyncPull(now, &items[i].Pull)
			e.learn = false
			if l.checkForgot(e, now) {
				forgot = append(forgot, e)
			}
		}
		e.mu.Unlock()
	}
	return forgot
}

// evictIdle drops keys unused for IdleAfter; what they still had to push
// or hand back goes with the next sync.
func (l *Limiter) evictIdle(ents []*entry, now int64) {
	idle := now - int64(l.cfg.IdleAfter)
	for _, e := range ents {
		e.mu.Lock()
		drop := e.used < idle && !e.evicted
		e.mu.Unlock()
		if !drop {
			continue
		}
		l.createMu.Lock()
		e.mu.Lock()
		still := e.used < idle
		e.mu.Unlock()
		if still {
			l.drop(e, now)
		}
		l.createMu.Unlock()
	}
}

// Close stops the sync loop and pushes what is unsynced, within
// CloseTimeout (a batch that times out is sent again). It returns the
// final sync's error, saying how far it got. Decisions under way when it
// begins end normally and are pushed; any asked after it began return
// ErrClosed and count nothing.
func (l *Limiter) Close() error {
	if l.closed.Swap(true) {
		return errors.New("limiter: closed twice")
	}
	close(l.stop)
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.CloseTimeout)
	defer cancel()
	err := l.finalSync(ctx)
	if l.claimStop != nil { // released after the last sync's pushes
		close(l.claimStop)
		<-l.claimDone
	}
	if l.clock != nil {
		l.clock.release()
	}
	return err
}

// finalSync is Close's last sync: tried again while a batch times out
// (a slow store: each store call has SyncTimeout, the whole CloseTimeout)
// until ctx ends, which a retried push cannot count twice; a store that
// refuses the call is not waited for.
func (l *Limiter) finalSync(ctx context.Context) error {
	for {
		err := l.SyncNow(ctx)
		if err == nil || !timedOut(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(l.cfg.SyncTimeout/5, 100*time.Millisecond)):
		}
	}
}
