package catalog

import (
	"math"

	"github.com/fleetlimit/fleetlimit/internal/design"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

func init() {
	register(Info{
		Name:       "caddy-distributed",
		FreshQuiet: true,
		Summary:    "caddy-ratelimit's distributed mode: the others' counts at the last sync (not aged) + own admits in the window < L",
		New:        newCaddy,
	})
}

// caddyDist is mholt/caddy-ratelimit's distributed mode, the rule Caddy
// fleets run today (its source, distributed.go): every write interval each
// instance stores its count of the window, every read interval it reads
// the others', and it admits while the others' last counts, never aged,
// plus its own exact count of the window are under the limit. Here both
// intervals are Δ and fall at the gateway's sync, so the others' counts are
// as of their last push, counted by the store at this gateway's pull; they
// are not aged until the next pull, as in Caddy. The fallback, when the
// store is unreachable, is fleetlimit's remembering rule, as every design's.
type caddyDist struct {
	*design.Counter
	window window.Spec
	own    *window.Log // own admits in the window, exact
	others int         // the other gateways' admits at the last pull
}

func newCaddy(c design.Config) design.Gateway {
	return &caddyDist{Counter: design.NewSharedCounter(c), window: c.Window, own: window.New(c.Window, c.Limit)}
}

// admits is the rule for a request of cost n at now, applied to its last
// unit.
func (g *caddyDist) admits(now int64, n int) bool {
	return g.others+g.own.Count(now)+n-1 < g.Limit()
}

func (g *caddyDist) Decide(now int64, n int) (design.Verdict, store.Query) {
	if !g.admits(now, n) {
		return design.Reject, store.Query{}
	}
	g.Record().Add(now, n)
	g.own.Add(now, n)
	return design.Admit, store.Query{}
}

// Unadmit forgets a local admit, in the own log too.
func (g *caddyDist) Unadmit(now int64, n int, q store.Query) {
	g.Record().Unadmit(now, n, q)
	g.own.Unadd(n)
}

// RefusesUntil: between pulls the others' counts stand still, so the rule
// changes only when an own admit leaves the window.
func (g *caddyDist) RefusesUntil(now int64) int64 {
	if g.admits(now, 1) {
		return now
	}
	if t, ok := g.own.Oldest(); ok {
		return g.window.Reset(now, t)
	}
	return math.MaxInt64
}

// Fallback is the remembering rule, its admits logged as own.
func (g *caddyDist) Fallback(now int64, n int) design.Verdict {
	v := g.Counter.Fallback(now, n)
	if v == design.Admit {
		g.own.Add(now, n)
	}
	return v
}

func (g *caddyDist) SyncPush(now int64, p *store.Push) {
	g.Counter.SyncPush(now, p)
	p.WantOwn = true
}

func (g *caddyDist) SyncPull(now int64, p *store.Pull) {
	g.Counter.SyncPull(now, p)
	g.others = max(p.Count-p.Own, 0)
}

// View returns the admits left by the rule and when the oldest own admit
// leaves the window (0 when there is none and the others have admitted).
func (g *caddyDist) View(now int64, fallback bool) (int, int64) {
	if fallback {
		return g.Counter.View(now, true)
	}
	own := g.own.Count(now)
	var reset int64
	if t, ok := g.own.Oldest(); ok {
		reset = g.window.Reset(now, t)
	} else if g.others == 0 {
		reset = now
	}
	return max(g.Limit()-g.others-own, 0), reset
}
