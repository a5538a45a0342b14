package study

import (
	"math"
	"sort"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// Cell identifies a scenario: a run's parameters less its seed.
type Cell struct {
	Part     string
	Design   string
	Gateways int
	Sync     time.Duration
	Limit    int
	Window   time.Duration
	Kind     window.Kind
	Buckets  int    // the window's counters; 0: the exact log
	Traffic  string // the whole mix
	Routing  sim.Routing
	Faults   string // sim.Faults.String(): "" for the ideal store
}

func cellOf(r Row) Cell {
	p := r.Params
	return Cell{r.Part, p.Design, p.Gateways, p.Sync, p.Limit, p.Window, p.WindowKind, p.WindowBuckets, p.MixString(), p.Routing, p.Faults.String()}
}

// Mean is a cell's figures averaged over its seeds.
type Mean struct {
	Seeds    int
	Requests int64 // summed over seeds
	sim.Figures
	// against the first of sim.Params.Limits, when the runs have one
	AlsoAdmittedX, AlsoWorstWindowX float64
}

// table holds every cell's means.
type table map[Cell]Mean

func aggregate(rows []Row) table {
	t := table{}
	for _, r := range rows {
		c := cellOf(r)
		m := t[c]
		m.Seeds++
		m.Requests += r.Requests
		m.Add(r.Figures)
		if len(r.Limits) > 0 {
			m.AlsoAdmittedX += r.Limits[0].AdmittedX
			m.AlsoWorstWindowX += r.Limits[0].WorstWindowX
		}
		t[c] = m
	}
	for c, m := range t {
		m.Div(float64(m.Seeds))
		m.AlsoAdmittedX /= float64(m.Seeds)
		m.AlsoWorstWindowX /= float64(m.Seeds)
		t[c] = m
	}
	return t
}

// sortedCells returns t's cells in a fixed order.
func (t table) sortedCells() []Cell {
	cs := make([]Cell, 0, len(t))
	for c := range t {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		switch {
		case a.Part != b.Part:
			return a.Part < b.Part
		case a.Design != b.Design:
			return a.Design < b.Design
		case a.Gateways != b.Gateways:
			return a.Gateways < b.Gateways
		case a.Sync != b.Sync:
			return a.Sync < b.Sync
		case a.Limit != b.Limit:
			return a.Limit < b.Limit
		case a.Window != b.Window:
			return a.Window < b.Window
		case a.Kind != b.Kind:
			return a.Kind < b.Kind
		case a.Buckets != b.Buckets:
			return a.Buckets < b.Buckets
		case a.Traffic != b.Traffic:
			return a.Traffic < b.Traffic
		case a.Routing != b.Routing:
			return a.Routing < b.Routing
		}
		return a.Faults < b.Faults
	})
	return cs
}

// floodX is x, the attack traffic that arrives in one sync interval, in
// units of L: M x Δ / W.
func floodX(m float64, sync, w time.Duration) float64 { return m * float64(sync) / float64(w) }

// lawShared is the saturation law for shared-counter under an even flood:
// admitted_x = 1 + (K-1)(1 - exp(-x/(K-1))). For small x every request of
// one sync interval gets through before anyone learns of it (1 + x); the
// fleet can never admit more than K x L (each gateway alone stops at L).
func lawShared(x float64, k int) float64 {
	if k <= 1 {
		return 1
	}
	a := float64(k - 1)
	return 1 + a*(1-math.Exp(-x/a))
}

// Fit is how well a law matches the points it was checked against.
type Fit struct {
	Law         string  `json:"law"`
	Points      int     `json:"points"`
	RMSRelErr   float64 `json:"rms_relative_error"`
	MaxRelErr   float64 `json:"max_relative_error"`
	WorstPoint  string  `json:"worst_point"`
	FreeParams  int     `json:"free_parameters"`
	Description string  `json:"description"`
}
