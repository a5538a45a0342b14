package catalog

import (
	"math"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

func init() {
	register(Info{
		Name:       "doorman",
		Summary:    "Doorman's rate leases: each gateway asks every Δ for the rate it wants, the store grants one by ProportionalShare, and it admits within its rate alone",
		Peer:       true,
		RateLeases: RateProportional,
		New:        newDoorman,
	})
	register(Info{
		Name:       "doorman-fair",
		Summary:    "Doorman's rate leases by FairShare: each gateway asks every Δ for the rate it wants and admits within the rate it gets",
		Peer:       true,
		RateLeases: RateFair,
		New:        newDoorman,
	})
}

// doorman is Google's Doorman (youtube/doorman) as a fleet's limiter: the
// limit is the capacity, each gateway a client that asks for the rate it
// wants and gets a rate lease, and admits within its rate on its own. Every
// refresh interval (Δ; Doorman's typical is 5 s, its lease five minutes, so a
// lease never lapses between refreshes here) it asks for what it wants, its
// arrivals in the last window, refused ones too, at least one, and the store
// grants its rate by Doorman's ProportionalShare (doorman) or FairShare
// (doorman-fair) over every gateway's last want (memstore.Key.SetRateLeases;
// its tests reproduce Doorman's own). Its
// own admits in the sliding window are held to its rate. A rate comes only
// with a refresh: a gateway's first requests wait for its first lease.
type doorman struct {
	cfg   design.Config
	rate  int         // the rate this gateway has, per window
	own   *window.Log // its admits in the window
	arr   *window.Log // its arrivals in the window, refused ones too
	local design.Local
	// for the simulator's lazy mode (QuietWhileRatesHold): when it last
	// synced (or a quiet sync left out would have), the arrivals it
	// counted then, and whether any arrived since
	synced  bool
	at      int64
	counted int
	arrived bool
}

func newDoorman(c design.Config) design.Gateway {
	return &doorman{cfg: c, own: window.New(c.Window, c.Limit), arr: window.New(c.Window, 1<<30), local: design.NewLocal(c)}
}

func (d *doorman) Decide(now int64, n int) (design.Verdict, store.Query) {
	return d.Fallback(now, n), store.Query{}
}

func (d *doorman) Resume(now int64, n int, q store.Query, a store.Answer) design.Verdict {
	return design.Reject
}

// Fallback is the rule: the lease stands for its length, the store's
// absence changes nothing.
func (d *doorman) Fallback(now int64, n int) design.Verdict {
	d.arr.Add(now, n)
	d.arrived = true
	if d.own.Count(now)+n > d.rate {
		return design.Reject
	}
	d.own.Add(now, n)
	d.local.Add(now, n)
	return design.Admit
}

// Unadmit takes an admit back.
func (d *doorman) Unadmit(now int64, n int, q store.Query) {
	d.own.Unadd(n)
	d.local.Unadd(n)
}

func (d *doorman) Abandon(now int64, n int, q store.Query, fallback bool) design.Verdict {
	return design.Abandon(d, &d.local, now, n, q, fallback)
}

// SyncPush asks for the rate this gateway wants, and pushes its admits.
func (d *doorman) SyncPush(now int64, p *store.Push) {
	d.counted = d.arr.Count(now)
	d.synced, d.at, d.arrived = true, now, false
	*p = store.Push{Gateway: d.cfg.Gateway, Ask: max(d.counted, 1)}
	d.local.Push(p)
}

// QuietWhileRatesHold is how many of its next syncs would ask what the
// last one asked and push nothing, provided no request reaches it
// meanwhile: then, while no other gateway's want or rate changes
// (memstore.Key.RateVersion), the store grants what it granted and such a
// sync changes nothing. Its ask only falls as arrivals leave the window,
// and not below 1; the next change is when the oldest one counted leaves.
func (d *doorman) QuietWhileRatesHold() int {
	if !d.synced || d.arrived || d.local.QuietSyncs() == 0 {
		return 0
	}
	if d.counted <= 1 {
		return math.MaxInt // it asks 1 from now on
	}
	oldest, _ := d.arr.Oldest()
	leaves := d.cfg.Window.Reset(d.at, oldest)
	return int((leaves - d.at - 1) / int64(d.cfg.Sync)) // the syncs at d.at + nΔ before it leaves
}

// Skip accounts for n quiet syncs left out.
func (d *doorman) Skip(n int) { d.at += int64(n) * int64(d.cfg.Sync) }

// PullsView is true: a decision falls back, when it must, on the local
// view of the last pull, so the simulator performs the last sync before it.
func (d *doorman) PullsView() bool { return true }

// SyncPull takes the new lease.
func (d *doorman) SyncPull(now int64, p *store.Pull) {
	d.rate = p.Granted
	d.local.Pulled(now, p)
	d.local.Settle()
}

func (d *doorman) Held() int { return 0 }

// View is what the rate leaves in the window.
func (d *doorman) View(now int64, fallback bool) (int, int64) {
	return max(d.rate-d.own.Count(now), 0), 0
}
