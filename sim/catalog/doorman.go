package catalog

import (
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
	*p = store.Push{Gateway: d.cfg.Gateway, Ask: max(d.arr.Count(now), 1)}
	d.local.Push(p)
}

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
