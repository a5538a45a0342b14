package design

import "github.com/fleetlimit/fleetlimit/store"

func init() {
	register(Info{
		Name:       "central-log",
		Summary:    "every request asks the store; exact; one round trip per request",
		RoundTrips: true,
		NoSync:     true,
		New:        func(c Config) Gateway { return &centralLog{limit: c.Limit, gw: c.Gateway} },
	})
}

// centralLog decides nothing: the store decides every request. It keeps the
// count of the store's last answer, and the admits the driver made on its
// own while the store was unreachable, which its syncs push.
type centralLog struct {
	limit, gw int
	count     int
	pend      pending
}

func (c *centralLog) Decide(now int64, n int) (Decision, Query) {
	return Ask, Query{Kind: QueryCentral, N: n}
}

func (c *centralLog) Resume(now int64, n int, q Query, a Answer) Decision {
	c.count = a.Count
	if a.Admit {
		return Admit
	}
	return Reject
}

func (c *centralLog) SyncPush(now int64) store.Push {
	admits, seq := c.pend.push()
	return store.Push{Gateway: c.gw, Admits: admits, Seq: seq}
}

func (c *centralLog) SyncPull(now int64, p store.Pull) {
	c.pend.settle()
	c.count = p.Count
}

func (c *centralLog) Held() int { return 0 }

// Record keeps n admits the driver made on its own, for the next sync.
func (c *centralLog) Record(now int64, n int) { c.pend.add(now, n) }

// View returns what the store's last answer left; when budget frees, only
// the store knows.
func (c *centralLog) View(now int64) (int, int64) { return max(c.limit-c.count, 0), 0 }
