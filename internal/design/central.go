package design

import (
	"github.com/fleetlimit/fleetlimit/store"
)

func init() {
	register(Info{
		Name:    "central-log",
		Summary: "every request asks the store; exact; one round trip per request",
		Central: true,
		New:     newCentralLog,
	})
}

// centralLog decides nothing: the store decides every request. For its
// view and its fallback it keeps the count of the store's last answer (or
// pull), and in its local record the fallback's own admits, which its syncs
// push.
type centralLog struct {
	cfg   Config
	view  storeView
	local local
	// the last answer, when it is not in the view yet: the common answer
	// (no call, the key's life unchanged, no floor) is only noted, and
	// taken into the view when the view is read (catchUp), since the
	// simulator's central-log asks the store about every request and
	// reads the view only at syncs
	noted      bool
	notedAt    int64
	notedCount int
	// a sync in flight, and the highest count an answer reported
	// meanwhile: the store applied that check before the sync (the pull's
	// count holds it) or after (it does not), and the pull takes the larger
	syncing bool
	seen    int
}

func newCentralLog(c Config) Gateway {
	return &centralLog{cfg: c, local: newLocal(c)}
}

func (c *centralLog) Decide(now int64, n int) (Verdict, store.Query) {
	q := store.Query{Kind: store.QueryCentral, N: n}
	c.local.query(&q, false)
	return Ask, q
}

// Resume takes the store's decision; but a store that has lost the key
// since this gateway last heard of it (or whose count has not caught up with
// the gateways' re-seeds) may admit what the count remembered from before
// leaves no room for: that admit is withdrawn, and the request rejected.
func (c *centralLog) Resume(now int64, n int, q store.Query, a store.Answer) Verdict {
	if q.Call == nil && c.view.floor == 0 && c.local.sameLife(now, a.Gen) {
		c.noted, c.notedAt, c.notedCount = true, now, a.Count
		if !a.Admit {
			return Reject
		}
		c.local.remember(now, n)
		return Admit
	}
	c.catchUp()
	forgot, old, oldAt := c.local.answered(now, q.Call, a.Gen), 0, c.view.at
	lo := c.cfg.Window.Lo(now)
	if forgot {
		old = c.view.known(lo)
	}
	if c.syncing {
		c.seen = max(c.seen, a.Count)
	}
	c.view.answered(now, lo, a.Count, !c.syncing && c.local.crossed(q))
	if forgot {
		c.view.forgot(old, oldAt)
	}
	if !a.Admit {
		return Reject
	}
	if !c.view.unfloored(lo) && c.view.floor+n > c.cfg.Limit {
		c.local.abandon(now, q)
		return Reject
	}
	c.local.remember(now, n)
	return Admit
}

// Unadmit withdraws a central admit at the next contact, or forgets a
// fallback's admit.
func (c *centralLog) Unadmit(now int64, n int, q store.Query) { c.local.unadmit(now, n, q) }

// catchUp takes a noted answer into the view.
func (c *centralLog) catchUp() {
	if c.noted {
		c.noted = false
		c.view.rebase(c.notedAt, c.cfg.Window.Lo(c.notedAt), c.notedCount)
	}
}

// Fallback is the remembering rule over the store's last count and the
// fallback's admits not yet pushed.
func (c *centralLog) Fallback(now int64, n int) Verdict {
	c.catchUp()
	known, own := c.view.remembered(c.cfg.Window.Lo(now)), c.local.sinceSyncCount(now)
	if !remembered(&c.cfg, known, own, n) {
		return Reject
	}
	c.local.add(now, n)
	return Admit
}

// Abandon withdraws the central check and falls back.
func (c *centralLog) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	return abandon(c, &c.local, now, n, q, fallback)
}

// SyncPush pushes the fallback's admits, withdrawals and re-seed, and asks
// which stamps leave the window soon, for the fallback's view.
func (c *centralLog) SyncPush(now int64, p *store.Push) {
	*p = store.Push{Gateway: c.cfg.Gateway, Horizon: HorizonSyncs * int64(c.cfg.Sync)}
	c.local.push(p)
	c.syncing, c.seen = true, 0
}

func (c *centralLog) SyncPull(now int64, p *store.Pull) {
	c.catchUp()
	if !takePull(now, p, &c.view, &c.local, c.cfg.Window) && c.seen > p.Count {
		c.view.rebase(now, c.cfg.Window.Lo(now), c.seen) // an answer after the sync was the later
	}
	c.syncing, c.seen = false, 0
}

func (c *centralLog) Held() int { return 0 }

// QuietSyncs: central-log's syncs only push the fallback's admits (and
// withdrawals, and a re-seed).
func (c *centralLog) QuietSyncs() int { return c.local.quietSyncs() }

// Skip does nothing: central-log keeps no sync state.
func (c *centralLog) Skip(n int) {}

// PullsView is false: decisions come from the store, not from a pull.
func (c *centralLog) PullsView() bool { return false }

// View returns what the store's last word left; when budget frees, only
// the store knows. The fallback's view is the remembering rule's.
func (c *centralLog) View(now int64, fallback bool) (int, int64) {
	c.catchUp()
	lo := c.cfg.Window.Lo(now)
	if !fallback {
		return max(c.cfg.Limit-c.view.known(lo), 0), 0
	}
	return fallbackView(&c.cfg, &c.view, &c.local, now, c.view.remembered(lo), c.local.sinceSyncCount(now))
}
