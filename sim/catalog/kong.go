package catalog

import (
	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
)

func init() {
	for _, k := range []struct {
		name, summary string
		mode          kongMode
	}{
		{"kong-local", "Kong Rate Limiting Advanced, sync_rate -1 (its local strategy): each node its own sliding estimate against L, rejected requests counted", kongLocal},
		{"kong-sync", "Kong Rate Limiting Advanced, sync_rate = Δ: the sliding estimate over the cluster's counters as of the last sync plus the node's since", kongSync},
		{"kong-sync0", "Kong Rate Limiting Advanced, sync_rate 0: every request counted and the counters read at the store", kongSync0},
	} {
		register(Info{Name: k.name, Summary: k.summary, FixedWindow: true, Peer: true, NoSync: k.mode != kongSync,
			LocalState: k.mode != kongSync, SharedIndex: k.mode == kongSync0,
			New: func(c design.Config) design.Gateway { return newKong(c, k.mode) }})
	}
}

// kongMode is Kong's sync_rate: -1, > 0 (Δ) or 0.
type kongMode uint8

const (
	kongLocal kongMode = iota
	kongSync
	kongSync0
)

// kong is Kong Gateway's Rate Limiting Advanced plugin with its defaults
// (window_type sliding, disable_penalty false), as its docs describe it
// (developer.konghq.com, "Rate limiting window types" and the plugin's
// reference): counters per fixed window, and a sliding estimate, the
// previous window's count weighted by the share of it still inside the
// sliding window plus the current window's; a request is refused when the
// estimate has reached the limit, and every request counts, refused ones
// too (the penalty: "the algorithm counts the response 429", so a client
// that keeps sending faster than the limit stays refused). sync_rate says
// where the counters live: -1 (the local strategy, the plugin's default)
// in each node alone, each node holding its own L; > 0 (here Δ) in the
// cluster's store, each node adding its count since its last sync every
// sync_rate and reading the cluster's, deciding in between on those plus
// its own since; 0 at the store on every request. The store's key counts
// in fixed windows; the previous window's count is the last this node read
// of it plus its own since (Kong reads it from the store at each sync: the
// model may miss what other nodes counted in the last sync interval before
// the boundary).
type kong struct {
	cfg  design.Config
	mode kongMode
	w    int64
	// the window of cur, the cluster's count of it at the last sync (or
	// answer), and this node's count since then; the same for the window
	// before it
	start         int64
	cur, curOwn   int
	prev, prevOwn int
	pushedCur     int // curOwn's part already pushed in the sync in flight
	carry         store.Push
	carryT        [1]int64
	carryN        [1]int
	pushT         [2]int64
	pushN         [2]int
}

func newKong(c design.Config, m kongMode) design.Gateway {
	return &kong{cfg: c, mode: m, w: int64(c.Window.Size)}
}

// roll moves the counters to now's window.
func (k *kong) roll(now int64) {
	s := now - now%k.w
	switch {
	case s == k.start:
	case s == k.start+k.w:
		k.prev, k.prevOwn = k.cur, k.curOwn
		k.cur, k.curOwn, k.pushedCur = 0, 0, 0
	default:
		k.prev, k.prevOwn, k.cur, k.curOwn, k.pushedCur = 0, 0, 0, 0, 0
	}
	k.start = s
}

// estimate is the sliding estimate at now, before a request.
func (k *kong) estimate(now int64) float64 {
	weight := float64(k.w-(now-k.start)) / float64(k.w)
	return float64(k.prev+k.prevOwn)*weight + float64(k.cur+k.curOwn)
}

// hit counts n requests at now and says whether they are admitted.
func (k *kong) hit(now int64, n int) design.Verdict {
	ok := k.estimate(now)+float64(n) <= float64(k.cfg.Limit)
	k.curOwn += n // counted, admitted or not
	if ok {
		return design.Admit
	}
	return design.Reject
}

func (k *kong) Decide(now int64, n int) (design.Verdict, store.Query) {
	k.roll(now)
	if k.mode != kongSync0 {
		return k.hit(now, n), store.Query{}
	}
	// the request's count goes to the store with the read
	k.carryT[0], k.carryN[0] = now, n
	k.carry = store.Push{Gateway: k.cfg.Gateway, Admits: k.carryT[:], Counts: k.carryN[:]}
	return design.Ask, store.Query{Kind: store.QueryCentral, N: 0, Carry: &k.carry}
}

// Resume decides on the store's count, this request's included.
func (k *kong) Resume(now int64, n int, q store.Query, a store.Answer) design.Verdict {
	k.cur, k.curOwn = a.Count-n, 0
	return k.hit(now, n)
}

// Fallback decides on what the node knows.
func (k *kong) Fallback(now int64, n int) design.Verdict {
	k.roll(now)
	return k.hit(now, n)
}

// Unadmit: the request stays counted, as every refused one is.
func (k *kong) Unadmit(now int64, n int, q store.Query) {}

func (k *kong) Abandon(now int64, n int, q store.Query, fallback bool) design.Verdict {
	if !fallback {
		k.curOwn += n
		return design.Reject
	}
	return k.Fallback(now, n)
}

// SyncPush adds this node's count since the last sync (sync_rate > 0):
// one entry for the window before, one for this one.
func (k *kong) SyncPush(now int64, p *store.Push) {
	*p = store.Push{Gateway: k.cfg.Gateway}
	if k.mode != kongSync {
		return
	}
	k.roll(now)
	t, c := k.pushT[:0], k.pushN[:0]
	if k.prevOwn > 0 {
		t, c = append(t, k.start-1), append(c, k.prevOwn)
	}
	if k.curOwn > 0 {
		t, c = append(t, now), append(c, k.curOwn)
	}
	p.Admits, p.Counts = t, c
	k.pushedCur = k.curOwn
}

// SyncPull takes the cluster's count of this window, the node's pushed.
func (k *kong) SyncPull(now int64, p *store.Pull) {
	if k.mode != kongSync {
		return
	}
	k.roll(now)
	k.prev += k.prevOwn
	k.prevOwn = 0
	k.cur, k.curOwn = p.Count, k.curOwn-k.pushedCur
	k.pushedCur = 0
}

func (k *kong) Held() int { return 0 }

// View is what the estimate leaves, and the window's end.
func (k *kong) View(now int64, fallback bool) (int, int64) {
	k.roll(now)
	return max(int(float64(k.cfg.Limit)-k.estimate(now)), 0), k.start + k.w
}
