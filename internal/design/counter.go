package design

import (
	"math"

	"github.com/fleetlimit/fleetlimit/store"
)

func init() {
	register(Info{
		Name:    "shared-counter",
		Summary: "store count from the last sync (aged) + own admits since < L",
		Caveat:  "lets a flood through: admitted_x 2.456, worst window 2.730 × L at K = 8, Δ = 1 s, flood:100 (fleetlimit sim --design shared-counter --gateways 8 --sync 1s --traffic flood:100 --duration 20m); the study recommends " + Default,
		New:     func(c Config) Gateway { return newCounter(c, modeShared) },
	})
	register(Info{
		Name:    "extrapolate",
		Summary: "like shared-counter, but own admits since the sync count K times",
		Caveat:  "lets a flood through: admitted_x 1.449, worst window 1.470 × L at K = 8, Δ = 1 s, flood:100 (fleetlimit sim --design extrapolate --gateways 8 --sync 1s --traffic flood:100 --duration 20m); the study recommends " + Default,
		New:     func(c Config) Gateway { return newCounter(c, modeExtrapolate) },
	})
	register(Info{
		Name:        "track-share",
		Summary:     "like extrapolate, but own admits are divided by this gateway's measured share",
		Caveat:      "lets a flood through: admitted_x 1.898, worst window 2.200 × L at K = 8, Δ = 1 s, flood:100 (fleetlimit sim --design track-share --gateways 8 --sync 1s --traffic flood:100 --duration 20m); the study recommends " + Default,
		FineBuckets: true,
		New:         func(c Config) Gateway { return newCounter(c, modeTrackShare) },
	})
}

type counterMode uint8

const (
	modeShared counterMode = iota
	modeExtrapolate
	modeTrackShare
)

// HorizonSyncs is how many sync intervals ahead a counter design asks the
// store which stamps will leave the window. Past it (a late or lost sync) the
// gateway stops ageing its view and so over-counts: it errs towards
// rejecting, never towards admitting.
const HorizonSyncs = 2

// counter is shared-counter, extrapolate and track-share: a view of the
// store's count from the last sync that ages out between syncs, plus this
// gateway's own admits since that sync.
type counter struct {
	cfg   Config
	mode  counterMode
	limit float64

	view storeView // the store's count at the last sync, aged

	local local // own admits: since the last sync, and for the fallback

	share float64 // track-share: own share of recent admits, clamped
	floor float64 // track-share: the share's floor
}

func newCounter(c Config, m counterMode) Gateway {
	k := float64(c.Gateways)
	return &counter{cfg: c, mode: m, limit: float64(c.Limit), share: 1 / k, floor: 1 / (2 * k), local: newLocal(c)}
}

// known is the store's count from the last sync less what has aged out.
func (c *counter) known(lo int64) int { return c.view.known(lo) }

// own is this gateway's admits since the last sync still in the window.
func (c *counter) own(now int64) int { return c.local.sinceSyncCount(now) }

func (c *counter) Decide(now int64, n int) (Verdict, store.Query) {
	if !c.admits(now, n) {
		return Reject, store.Query{}
	}
	c.local.add(now, n)
	return Admit, store.Query{}
}

// admits is the design's rule: whether a request of cost n at now is
// admitted. It is admitted when n unit requests in a row at now would all
// be: the rule is applied to its last unit.
func (c *counter) admits(now int64, n int) bool {
	known, own := c.known(c.cfg.Window.Lo(now)), c.own(now)
	last := own + n - 1
	switch c.mode {
	case modeShared:
		return known+last < c.cfg.Limit
	case modeExtrapolate:
		return known+c.cfg.Gateways*last < c.cfg.Limit
	}
	return float64(known)+float64(last)/c.share < c.limit
}

// Refused does nothing: a rejection changes nothing.
func (c *counter) Refused(n int) {}

// CountsRefusals is false: a rejection changes nothing.
func (c *counter) CountsRefusals() bool { return false }

// RefusesUntil: a rejection changes nothing, and the rule's figures only
// fall when a stamp of the view or an own admit since the sync leaves the
// window.
func (c *counter) RefusesUntil(now int64) int64 {
	if c.admits(now, 1) {
		return now
	}
	return c.view.agesAt(c.cfg.Window, &c.local, now)
}

func (c *counter) Resume(now int64, n int, q store.Query, a store.Answer) Verdict { return Reject }

// Unadmit forgets a local admit.
func (c *counter) Unadmit(now int64, n int, q store.Query) { c.local.unadmit(now, n, q) }

// Fallback is the remembering rule over the view and the admits since the
// last sync.
func (c *counter) Fallback(now int64, n int) Verdict {
	known, own := c.view.remembered(c.cfg.Window.Lo(now)), c.own(now)
	if !remembered(&c.cfg, known, own, n) {
		return Reject
	}
	c.local.add(now, n)
	return Admit
}

// Abandon: the counter designs never ask the store.
func (c *counter) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	return abandon(c, &c.local, now, n, q, fallback)
}

func (c *counter) SyncPush(now int64, p *store.Push) {
	*p = store.Push{
		Gateway: c.cfg.Gateway,
		Horizon: HorizonSyncs * int64(c.cfg.Sync),
		WantOwn: c.mode == modeTrackShare,
	}
	c.local.push(p)
}

func (c *counter) SyncPull(now int64, p *store.Pull) {
	takePull(now, p, &c.view, &c.local, c.cfg.Window)
	if c.mode == modeTrackShare {
		if p.Count == 0 {
			c.share = 1 / float64(c.cfg.Gateways)
		} else {
			c.share = float64(p.Own) / float64(p.Count)
		}
		c.share = min(max(c.share, c.floor), 1)
	}
}

func (c *counter) Held() int { return 0 }

// QuietSyncs: with no admits to push, a sync only refreshes the view.
func (c *counter) QuietSyncs() int { return c.local.quietSyncs() }

// Skip does nothing: the view is refreshed by the last sync before a decision.
func (c *counter) Skip(n int) {}

// PullsView is true: the view comes from the last pull.
func (c *counter) PullsView() bool { return true }

// View returns the admits left by this design's rule and the next time a
// stamp it counts leaves the window (0 when it knows of none). With
// fallback set it is the local quota's view.
func (c *counter) View(now int64, fallback bool) (int, int64) {
	if fallback {
		return fallbackView(&c.cfg, &c.view, &c.local, now, c.view.remembered(c.cfg.Window.Lo(now)), c.own(now))
	}
	known, own := c.known(c.cfg.Window.Lo(now)), c.own(now)
	left := c.cfg.Limit - known
	var rem int
	switch c.mode {
	case modeShared:
		rem = left - own
	case modeExtrapolate:
		rem = (left+c.cfg.Gateways-1)/c.cfg.Gateways - own
	default:
		rem = int(math.Ceil(float64(left)*c.share)) - own
	}
	oldest := int64(math.MaxInt64)
	if t, ok := c.view.nextExpiry(); ok {
		oldest = t
	}
	if i := c.local.sinceSync(now); i < len(c.local.stamps) {
		oldest = min(oldest, c.local.stamps[i])
	}
	// Knowing of no stamp that leaves before the ageing horizon says
	// nothing of when one leaves after it: 0, the driver's latest bound.
	var reset int64
	if oldest != math.MaxInt64 {
		reset = c.cfg.Window.Reset(now, oldest)
	} else if known == 0 {
		reset = now
	}
	return max(rem, 0), reset
}
