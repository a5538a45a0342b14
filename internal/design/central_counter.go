package design

import (
	"math"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

func init() {
	register(Info{
		Name:        "central-counter",
		Summary:     "envoyproxy/ratelimit's algorithm: every request adds to a store counter per fixed window, rejected ones too",
		Central:     true,
		FixedWindow: true,
		CheckOnly:   true,
		SharedIndex: true,
		New:         newCentralCounter,
	})
}

// centralCounter decides nothing: every request adds its cost to the
// store's counter of the current fixed window (QueryCounter) and is admitted
// when the counter is then at most the limit. A rejected request still
// counts, as in envoyproxy/ratelimit, so that a fleet of both shares one
// count; a request of cost 0 only reads the counter. Its fallback is the
// remembering rule over the counter's last answer and its own fallback
// admits, which its next query adds to the counter of their window (the
// nemesis found a fleet that never told the store of them admitting 2 L
// in one window after an outage).
type centralCounter struct {
	cfg   Config
	limit int
	spec  window.Spec
	count int // the window's count at the last answer (counted)
	raw   int // the store's counter at the last answer
	at    int64
	// after the store lost the counter of the window starting at floorLo:
	// the count before, and the new counter's value when it was found
	floor, floorFrom int
	floorLo          int64
	quota            int
	backup           *window.Log // the fallback's admits
	// told of the fallback's admits in the window starting at toldLo are
	// in the store's counter
	told   int
	toldLo int64
}

func newCentralCounter(c Config) Gateway {
	quota := (c.Limit + c.Gateways - 1) / c.Gateways
	spec := window.Spec{Size: c.Window.Size, Kind: window.Fixed}
	return &centralCounter{cfg: c, limit: c.Limit, spec: spec, quota: quota, backup: window.New(spec, quota)}
}

// Decide asks the store to add n (n = 0: to read the counter), and the
// fallback's admits of now's window the counter has not had.
func (c *centralCounter) Decide(now int64, n int) (Verdict, store.Query) {
	return Ask, store.Query{Kind: store.QueryCounter, N: n + c.untold(now)}
}

// untold is the fallback's admits of now's window not yet in the counter.
func (c *centralCounter) untold(now int64) int {
	own := c.backup.Count(now)
	if c.spec.Lo(now) == c.toldLo {
		own -= c.told
	}
	return max(own, 0)
}

// Resume admits when the counter, this request included, is within the
// limit.
func (c *centralCounter) Resume(now int64, n int, q store.Query, a store.Answer) Verdict {
	if lo := c.spec.Lo(now); q.N > n {
		if lo != c.toldLo {
			c.told, c.toldLo = 0, lo
		}
		c.told += q.N - n
	}
	c.count, c.at = c.counted(now, q.N, a.Count), now
	if c.count <= c.limit {
		return Admit
	}
	return Reject
}

// counted is the window's count after an answer of counter to a query
// that added added at now. A counter only grows within its window, so one
// that answers less than the gateway last heard in the same window was
// lost (a Redis restarted without persistence, FLUSHALL): from then on in
// that window the gateway counts from what it last heard (the floor) plus
// what the new counter added since.
func (c *centralCounter) counted(now int64, added, counter int) int {
	lo := c.spec.Lo(now)
	same := c.at != 0 && c.spec.Lo(c.at) == lo
	if same && counter < c.raw { // (not counter-added: on a key of several limits a refused request adds nothing)
		c.floor, c.floorFrom, c.floorLo = c.count, counter-added, lo
	}
	c.raw = counter
	if c.floorLo == lo && c.floor > 0 {
		return c.floor + counter - c.floorFrom
	}
	return counter
}

// Fallback is the remembering rule over the counter's last answer, in its
// window, and the fallback's own admits.
func (c *centralCounter) Fallback(now int64, n int) Verdict {
	if !remembered(&c.cfg, c.known(now), c.backup.Count(now), n) {
		return Reject
	}
	c.backup.Add(now, n)
	return Admit
}

// known is the counter as last answered, if that was in now's window.
func (c *centralCounter) known(now int64) int {
	if c.at == 0 || c.spec.Lo(c.at) != c.spec.Lo(now) {
		return 0
	}
	return c.count
}

// Abandon falls back: the counter counts every request, so nothing is to
// be taken back.
func (c *centralCounter) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	if !fallback {
		return Reject
	}
	return c.Fallback(now, n)
}

// SyncPush pushes nothing: the counter is the store's alone.
func (c *centralCounter) SyncPush(now int64, p *store.Push) { *p = store.Push{} }

// SyncPull ignores the pull.
func (c *centralCounter) SyncPull(now int64, p *store.Pull) {}

// Unadmit forgets a fallback's admit. An admit the counter answered needs
// nothing: on a key with several limits the store adds a request to a
// counter it fits only when it fits every one (memstore.AnswerAll).
func (c *centralCounter) Unadmit(now int64, n int, q store.Query) {
	if q.Kind == 0 {
		c.backup.Unadd(n)
	}
}

func (c *centralCounter) Held() int { return 0 }

// QuietSyncs: central-counter never needs a sync.
func (c *centralCounter) QuietSyncs() int { return math.MaxInt }

// Skip does nothing: central-counter keeps no sync state.
func (c *centralCounter) Skip(n int) {}

// PullsView is false: the view is the store's last answer.
func (c *centralCounter) PullsView() bool { return false }

// View is what the store's last answer left of the limit in its window,
// which ends the counter's window (a later window starts from 0).
func (c *centralCounter) View(now int64, fallback bool) (int, int64) {
	end := c.spec.Lo(now) + int64(c.spec.Size)
	if fallback {
		return rememberedLeft(&c.cfg, c.known(now), c.backup.Count(now)), end
	}
	if c.spec.Lo(c.at) != c.spec.Lo(now) {
		return c.limit, end
	}
	return max(c.limit-c.count, 0), end
}
