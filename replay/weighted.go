package replay

import (
	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// runWeighted runs one design on a segment whose requests have costs (a
// CSV's fourth column), which the simulator's runs do not take: the same
// gateways, store and sync phases as a run of p, every sync performed in
// its turn before the requests at or after it, as the simulator's plain
// mode does, and each request decided at its cost. The worst window counts
// the requests' costs, against the limit.
func runWeighted(p sim.Params, rel []int64, g, cost []uint16, exact []bool, isExact bool) (Figures, error) {
	info, err := catalog.Lookup(p.Design)
	if err != nil {
		return Figures{}, err
	}
	spec := p.Spec()
	key := memstore.NewKey(p.Limit, spec)
	if info.RateLeases != "" {
		key.SetRateLeases(info.RateLeases == catalog.RateFair)
	}
	gws := make([]design.Gateway, p.Gateways)
	for i := range gws {
		gws[i] = info.New(design.Config{Limit: p.Limit, Window: spec, Gateways: p.Gateways, Gateway: i, Sync: p.Sync})
	}
	phase, order := sim.SyncPhases(p)
	f := Figures{Requests: int64(len(rel))}
	var push store.Push
	var pull store.Pull
	j, round, delta := 0, int64(0), int64(p.Sync)
	ww := windowWorst{spec: spec}
	for i, t := range rel {
		for !info.NoSync { // every sync due by t, in turn
			gw := order[j]
			at := phase[gw] + round*delta
			if at > t {
				break
			}
			gws[gw].SyncPush(at, &push)
			key.SyncTo(at, &push, &pull)
			gws[gw].SyncPull(at, &pull)
			if j++; j == len(order) {
				j, round = 0, round+1
			}
		}
		n, gw := int(cost[i]), int(g[i])
		v, q := gws[gw].Decide(t, n)
		if v == design.Ask {
			f.RoundTrips++
			v = gws[gw].Resume(t, n, q, key.Answer(t, gw, q))
		}
		admit := v == design.Admit
		switch {
		case isExact:
			exact[i] = admit
		case admit && !exact[i]:
			f.FalseAdmit++
		case !admit && exact[i]:
			f.FalseRefus++
		}
		if admit {
			f.Admitted++
			ww.add(t, n)
		} else {
			f.Rejected++
		}
	}
	f.WorstWindowX = float64(ww.worst) / float64(p.Limit)
	f.KeySyncs, err = sim.ScheduledSyncs(p) // as a run counts them, to its end
	return f, err
}

// windowWorst is the most any window of spec held, counting costs.
type windowWorst struct {
	spec  window.Spec
	t     []int64
	n     []int
	head  int
	sum   int
	worst int
}

func (w *windowWorst) add(t int64, n int) {
	lo := w.spec.Lo(t)
	for w.head < len(w.t) && w.t[w.head] < lo {
		w.sum -= w.n[w.head]
		w.head++
	}
	w.t, w.n = append(w.t, t), append(w.n, n)
	w.sum += n
	w.worst = max(w.worst, w.sum)
}
