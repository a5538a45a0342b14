package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/store"
)

// budgetWatch records, per gateway, the most requests a headroom gateway
// admitted locally (without the store) between two pulls: its largest local
// budget in use, B_j of docs/design.md's bound.
type budgetWatch struct {
	cur, most []int
}

func (w *budgetWatch) sum() int {
	s := 0
	for j := range w.most {
		s += max(w.most[j], w.cur[j])
	}
	return s
}

type watched struct {
	design.Gateway
	w *budgetWatch
	g int
}

func (x watched) Decide(now int64, n int) (design.Verdict, store.Query) {
	v, q := x.Gateway.Decide(now, n)
	if v == design.Admit {
		x.w.cur[x.g] += n
	}
	return v, q
}

func (x watched) SyncPull(now int64, p *store.Pull) {
	x.Gateway.SyncPull(now, p)
	x.w.renew(x.g)
}

// renew closes gateway g's budget period.
func (w *budgetWatch) renew(g int) {
	w.most[g] = max(w.most[g], w.cur[g])
	w.cur[g] = 0
}

// current is the watch of the run in progress (the test runs one at a time).
var current *budgetWatch

func registerWatched(t *testing.T, tolerance float64) string {
	name := fmt.Sprintf("headroom-watched@%g", tolerance)
	if _, err := catalog.Lookup(name); err == nil {
		return name
	}
	err := catalog.Register(catalog.Info{Name: name, New: func(c design.Config) design.Gateway {
		return watched{design.NewHeadroom(c, tolerance), current, c.Gateway}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// headroom's bound (docs/design.md): in any window it admits at most L plus
// the local budgets of one sync interval, Σ_j B_j. Held on adversarial
// traffic: floods of every rate, aimed at one gateway or half the fleet,
// pulsed, and sudden on an honest key, at both ends of the tolerance, and
// with the window in 60 counters of one Δ (K = 8).
func TestHeadroomBound(t *testing.T) {
	traffics := []string{"flood:1.5", "flood:10", "flood:100", "flood:1000", "flood:30@1", "flood:300@2",
		"flood:1000~5s/55s", "steady:0.8,flood:30+5m", "steady:0.8,flood:1000+5m", "steady:1,flood:100@1+5m"}
	worstSlack := 1.0
	for _, run := range []struct {
		tol     float64
		buckets int
	}{{design.HeadroomTolerance, 0}, {1, 0}, {design.HeadroomTolerance, 60}} {
		tol := run.tol
		name := registerWatched(t, tol)
		for _, k := range []int{2, 8, 32} {
			for _, sync := range []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second} {
				if run.buckets > 0 && (k != 8 || sync != time.Second) {
					continue // counters: the fleet and Δ where a bucket is as wide as Δ
				}
				for _, tr := range traffics {
					p := Defaults()
					p.Design, p.Gateways, p.Sync, p.Duration, p.Seed = name, k, sync, 10*time.Minute, 3
					p.WindowBuckets = run.buckets
					p.Traffic, p.Also = mustMix(t, tr)
					current = &budgetWatch{cur: make([]int, k), most: make([]int, k)}
					res, err := Run(p)
					if err != nil {
						t.Fatal(err)
					}
					bound := p.Limit + current.sum()
					worst := int(res.WorstWindowX*float64(p.Limit) + 0.5)
					if worst > bound {
						t.Fatalf("t=%g buckets=%d K=%d Δ=%v %s: worst window %d, over the bound L + Σ B_j = %d", tol, run.buckets, k, sync, tr, worst, bound)
					}
					if worst > p.Limit {
						worstSlack = min(worstSlack, float64(bound-worst)/float64(bound-p.Limit))
					}
				}
			}
		}
	}
	t.Logf("closest approach: %.0f%% of the bound's margin left", 100*worstSlack)
}
