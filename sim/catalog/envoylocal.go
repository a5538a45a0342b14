package catalog

import (
	"math"

	"github.com/fleetlimit/fleetlimit/internal/design"

	"github.com/fleetlimit/fleetlimit/store"
)

func init() {
	register(Info{
		Name:       "envoy-local",
		FreshQuiet: true,
		Summary:    "Envoy's local rate limit on every proxy: a token bucket of ceil(L/K), refilled whole every W; no coordination",
		PushOnly:   true,
		Peer:       true,
		New:        func(c design.Config) design.Gateway { return newEnvoyLocal(c, false) },
	})
	register(Info{
		Name:       "envoy-local-smooth",
		FreshQuiet: true,
		Summary:    "Envoy's local rate limit on every proxy: a token bucket of ceil(L/K), one token every W·K/L; no coordination",
		PushOnly:   true,
		Peer:       true,
		New:        func(c design.Config) design.Gateway { return newEnvoyLocal(c, true) },
	})
}

// envoyLocal is Envoy's local rate limit filter (envoy.filters.http.
// local_ratelimit) on every proxy of the fleet: each proxy a token bucket of
// its own (type.v3.TokenBucket: max_tokens, the bucket's size and what it
// holds at first; tokens_per_fill added every fill_interval, never past
// max_tokens), no coordination at all. Envoy has no defaults for the bucket
// (fill_interval is required), so the fleet's limit split K ways is what an
// operator configures: max_tokens = tokens_per_fill = ceil(L/K), fill_interval
// = W (envoy-local), or max_tokens = ceil(L/K), tokens_per_fill = 1,
// fill_interval = W·K/L (envoy-local-smooth). Fills fall at the multiples of
// fill_interval (a proxy's timer starts with its configuration; here at time
// zero). A request of cost n takes n tokens. Its syncs only push its admits,
// so that the store's log holds them, as split's.
type envoyLocal struct {
	gw       int
	max      int   // max_tokens
	perFill  int   // tokens_per_fill
	interval int64 // fill_interval, ns
	tokens   int
	filled   int64 // the fill the bucket has had: floor(t / interval)
	local    design.Local
}

func newEnvoyLocal(c design.Config, smooth bool) *envoyLocal {
	share := (c.Limit + c.Gateways - 1) / c.Gateways
	e := &envoyLocal{gw: c.Gateway, max: share, perFill: share, interval: int64(c.Window.Size), local: design.NewLocal(c)}
	if smooth {
		e.perFill = 1
		e.interval = max(int64(math.Round(float64(c.Window.Size)*float64(c.Gateways)/float64(c.Limit))), 1)
	}
	e.tokens = e.max
	return e
}

// fill adds the tokens of the fills up to now.
func (e *envoyLocal) fill(now int64) {
	f := now / e.interval
	if f <= e.filled {
		return
	}
	add := (f - e.filled) * int64(e.perFill)
	e.tokens = int(min(int64(e.tokens)+add, int64(e.max)))
	e.filled = f
}

func (e *envoyLocal) Decide(now int64, n int) (design.Verdict, store.Query) {
	return e.Fallback(now, n), store.Query{}
}

func (e *envoyLocal) Resume(now int64, n int, q store.Query, a store.Answer) design.Verdict {
	return design.Reject
}

// Fallback is the rule itself: the proxy never asks anyone.
func (e *envoyLocal) Fallback(now int64, n int) design.Verdict {
	e.fill(now)
	if e.tokens < n {
		return design.Reject
	}
	e.tokens -= n
	e.local.Add(now, n)
	return design.Admit
}

// Unadmit puts the tokens back.
func (e *envoyLocal) Unadmit(now int64, n int, q store.Query) {
	e.tokens += n
	e.local.Unadd(n)
}

// Abandon: the proxy never asks the store.
func (e *envoyLocal) Abandon(now int64, n int, q store.Query, fallback bool) design.Verdict {
	return design.Abandon(e, &e.local, now, n, q, fallback)
}

func (e *envoyLocal) SyncPush(now int64, p *store.Push) {
	*p = store.Push{Gateway: e.gw}
	e.local.Push(p)
}

func (e *envoyLocal) SyncPull(now int64, p *store.Pull) {
	e.local.Pulled(now, p)
	e.local.Settle()
}

func (e *envoyLocal) Held() int { return 0 }

// QuietSyncs: the syncs only push the admits.
func (e *envoyLocal) QuietSyncs() int { return e.local.QuietSyncs() }

// Skip does nothing: no sync state.
func (e *envoyLocal) Skip(n int) {}

// PullsView is false: the pull changes nothing.
func (e *envoyLocal) PullsView() bool { return false }

// View returns the tokens left and when the next fill comes.
func (e *envoyLocal) View(now int64, fallback bool) (int, int64) {
	e.fill(now)
	return e.tokens, (now/e.interval + 1) * e.interval
}
