package design

import (
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

func init() {
	register(Info{
		Name:    "central-log",
		Summary: "every request asks the store; exact; one round trip per request",
		NoSync:  true,
		New:     newCentralLog,
	})
}

// centralLog decides nothing: the store decides every request. It keeps the
// count of the store's last answer; for the fallback, its admits the store
// logged (up to the quota) and, in its local record, the fallback's own,
// which its syncs push.
type centralLog struct {
	limit, gw int
	count     int
	central   *window.Log // admits the store logged, newest up to the quota
	local     local
}

func newCentralLog(c Config) Gateway {
	l := newLocal(c)
	return &centralLog{limit: c.Limit, gw: c.Gateway, local: l, central: window.New(c.Window, l.quota)}
}

func (c *centralLog) Decide(now int64, n int) (Verdict, store.Query) {
	return Ask, store.Query{Kind: store.QueryCentral, N: n}
}

func (c *centralLog) Resume(now int64, n int, q store.Query, a store.Answer) Verdict {
	c.count = a.Count
	if a.Admit {
		c.central.Add(now, n)
		return Admit
	}
	return Reject
}

// Fallback is the local quota over both the store's admits of this gateway
// and the fallback's own.
func (c *centralLog) Fallback(now int64, n int) Verdict {
	if c.central.Count(now)+c.local.count(now)+n > c.local.quota {
		return Reject
	}
	c.local.add(now, n)
	return Admit
}

func (c *centralLog) SyncPush(now int64, p *store.Push) {
	*p = store.Push{Gateway: c.gw}
	c.local.push(p)
}

func (c *centralLog) SyncPull(now int64, p *store.Pull) {
	c.local.settle()
	c.count = p.Count
}

func (c *centralLog) Held() int { return 0 }

// QuietSyncs: central-log's syncs only push the fallback's admits.
func (c *centralLog) QuietSyncs() int { return c.local.quietSyncs() }

// Skip does nothing: central-log keeps no sync state.
func (c *centralLog) Skip(n int) {}

// PullsView is false: decisions come from the store, not from a pull.
func (c *centralLog) PullsView() bool { return false }

// View returns what the store's last answer left; when budget frees, only
// the store knows. The fallback's view counts both records.
func (c *centralLog) View(now int64, fallback bool) (int, int64) {
	if !fallback {
		return max(c.limit-c.count, 0), 0
	}
	used := c.central.Count(now)
	oldest, ok := c.central.Oldest()
	return c.local.view(now, used, oldest, ok)
}
