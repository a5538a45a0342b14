package study

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/sweep"
	"github.com/fleetlimit/fleetlimit/window"
)

// Question is what advise is asked: the fleet, the limit, the traffic and
// the threat, the store, and the budgets a user accepts.
type Question struct {
	Gateways []int           // K, or several to hold for all of them
	Syncs    []time.Duration // candidate Δ
	Limit    int
	Window   time.Duration
	Honest   sim.Traffic // the expected honest traffic
	Routing  sim.Routing // of the honest traffic
	Threat   sim.Traffic // the flood to hold against
	Faults   sim.Faults  // the store and gateways as they are
	Seeds    int
	Budgets  Budgets
}

// Budgets are the most a user accepts.
type Budgets struct {
	OverX      float64 // worst_window_x under the threat, e.g. 1.1
	RejectPct  float64 // honest requests rejected, percent
	RoundTrips float64 // honest requests that wait on the store, percent
	StoreCalls float64 // store calls (syncs and round trips) per key per second, honest traffic
}

// Candidate is one design at one Δ, with its figures: for several K, the
// worst of them.
type Candidate struct {
	Design       string        `json:"design"`
	Sync         time.Duration `json:"-"`
	SyncText     string        `json:"sync"`           // "" for a design that does not sync
	WorstWindowX float64       `json:"worst_window_x"` // under the threat
	AdmittedX    float64       `json:"admitted_x"`     // under the threat
	RejectedPct  float64       `json:"rejected_pct"`   // of the honest traffic
	RoundTripPct float64       `json:"round_trip_pct"` // of the honest traffic
	SyncsPerSec  float64       `json:"syncs_per_second"`
	// StoreCallsPerSec is the store's load under the honest traffic: the
	// fleet's syncs and round trips per key per second.
	StoreCallsPerSec float64 `json:"store_calls_per_second"`
	// SpreadWorstWindowX is the worst window under the threat's flood
	// spread over every gateway (the threat's own when it is spread).
	SpreadWorstWindowX float64 `json:"spread_worst_window_x"`
	Fits               bool    `json:"fits"`
	Score              float64 `json:"score"`
	Why                string  `json:"why"`
}

// Validate reports the first thing wrong with q.
func (q Question) Validate() error {
	switch {
	case len(q.Gateways) == 0 || len(q.Syncs) == 0:
		return fmt.Errorf("advise needs at least one K and one Δ")
	case q.Threat.Kind != sim.Flood:
		return fmt.Errorf("threat %v: want a flood, e.g. flood:100 or flood:100@1", q.Threat)
	case q.Honest.Kind == sim.Flood:
		return fmt.Errorf("honest traffic %v: want steady:F or pageload:F", q.Honest)
	case q.Seeds < 1 || q.Seeds > 20:
		return fmt.Errorf("seeds %d: want 1 to 20", q.Seeds)
	case !(q.Budgets.OverX >= 1):
		return fmt.Errorf("max over-admission %v: must be at least 1 (× L)", q.Budgets.OverX)
	case !(q.Budgets.RejectPct >= 0 && q.Budgets.RejectPct <= 100) || !(q.Budgets.RoundTrips >= 0 && q.Budgets.RoundTrips <= 100):
		return fmt.Errorf("budgets in percent must be between 0 and 100")
	case !(q.Budgets.StoreCalls >= 0) || math.IsInf(q.Budgets.StoreCalls, 0):
		return fmt.Errorf("max store calls %v: want a number of calls per key per second, 0 or more", q.Budgets.StoreCalls)
	}
	for _, p := range q.params("", q.Gateways[0], q.Syncs[0], 1) {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	for _, k := range q.Gateways {
		if k < 1 || k > design.MaxGateways {
			return fmt.Errorf("gateways %d: must be between 1 and %d", k, design.MaxGateways)
		}
	}
	return nil
}

// adviseFlood and adviseHonest are the lengths of advise's runs: short
// enough for a few seconds in all, long enough for 19 windows past the
// first.
const (
	adviseFlood  = 20
	adviseHonest = 60
)

// params are the honest run and the flood run of design d at k and sync,
// and the flood spread over every gateway when the threat is aimed at
// fewer (ok false when it is not).
func (q Question) spreadParams(d string, k int, sync time.Duration, seed uint64) (sim.Params, bool) {
	f := q.params(d, k, sync, seed)[1]
	if f.Traffic.Target == 0 || f.Traffic.Target >= k {
		return f, false
	}
	f.Traffic.Target = 0
	return f, true
}

// params are the honest run and the flood run of design d at k and sync.
func (q Question) params(d string, k int, sync time.Duration, seed uint64) [2]sim.Params {
	p := sim.Defaults()
	if d == "" {
		d = "central-log"
	}
	p.Design, p.Gateways, p.Sync, p.Limit, p.Window, p.Seed, p.Faults = d, k, sync, q.Limit, q.Window, seed, q.Faults
	p.WindowKind = window.Sliding
	honest, flood := p, p
	honest.Traffic, honest.Routing, honest.Duration = q.Honest, q.Routing, adviseHonest*q.Window
	flood.Traffic, flood.Duration = q.Threat, adviseFlood*q.Window
	return [2]sim.Params{honest, flood}
}

// Designs are advise's candidates: every registered design that counts in a
// sliding window.
func (q Question) designs() []string { return BeyondDesigns() }

// syncsOf are the Δ to try for design d: one for a design that does not
// sync (its figures do not depend on Δ).
func (q Question) syncsOf(d string) []time.Duration {
	if info, _ := catalog.Lookup(d); info.NoSync {
		return q.Syncs[:1]
	}
	return q.Syncs
}

// Advise runs the simulations the question needs, in parallel, and returns
// every candidate ranked: those within every budget first.
func Advise(ctx context.Context, q Question, workers int) ([]Candidate, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	params, keys := q.adviceRuns()
	out := sweep.Run(ctx, params, sweep.Options{Workers: workers, NoStoreCounts: true}) // advice weighs none
	// per candidate and K: the mean over seeds; then the worst over K
	accs := map[adviceKey]*adviceAcc{}
	for i, o := range out {
		if o.Err != nil {
			return nil, fmt.Errorf("run %v: %w", params[i], o.Err)
		}
		if !o.Done {
			return nil, ctx.Err()
		}
		kk := keys[i]
		kk.spread = false
		a := accs[kk]
		if a == nil {
			a = &adviceAcc{honest: map[int][]sim.Result{}, flood: map[int][]sim.Result{}, spread: map[int][]sim.Result{}}
			accs[kk] = a
		}
		m := a.honest
		switch {
		case keys[i].spread:
			m = a.spread
		case params[i].Traffic.Kind == sim.Flood:
			m = a.flood
		}
		m[params[i].Gateways] = append(m[params[i].Gateways], o.Result)
	}
	var cands []Candidate
	for _, d := range q.designs() {
		for _, sync := range q.syncsOf(d) {
			cands = append(cands, q.candidate(d, sync, accs[adviceKey{d, sync, false}]))
		}
	}
	return Rank(cands, q.Budgets), nil
}

// adviceKey names a candidate's runs: design, Δ, and whether they are the
// spread flood's.
type adviceKey struct {
	d      string
	sync   time.Duration
	spread bool
}

// adviceAcc are a candidate's results by K: honest, flood, spread flood.
type adviceAcc struct{ honest, flood, spread map[int][]sim.Result }

// adviceRuns are every run advice weighs, each with its candidate's key.
func (q Question) adviceRuns() ([]sim.Params, []adviceKey) {
	var params []sim.Params
	var keys []adviceKey
	for _, d := range q.designs() {
		for _, sync := range q.syncsOf(d) {
			for _, k := range q.Gateways {
				for s := 1; s <= q.Seeds; s++ {
					pp := q.params(d, k, sync, uint64(s))
					params = append(params, pp[0], pp[1])
					keys = append(keys, adviceKey{d, sync, false}, adviceKey{d, sync, false})
					if sp, ok := q.spreadParams(d, k, sync, uint64(s)); ok {
						params = append(params, sp)
						keys = append(keys, adviceKey{d, sync, true})
					}
				}
			}
		}
	}
	return params, keys
}

// candidate is design d at Δ sync, its figures the worst over K of the
// means over seeds of a's runs.
func (q Question) candidate(d string, sync time.Duration, a *adviceAcc) Candidate {
	c := Candidate{Design: d, Sync: sync, SyncText: sync.String()}
	info, _ := catalog.Lookup(d)
	if info.NoSync {
		c.SyncText = "" // it never syncs
	}
	for _, k := range q.Gateways {
		h, f := sim.Mean(a.honest[k]), sim.Mean(a.flood[k])
		c.WorstWindowX = math.Max(c.WorstWindowX, f.WorstWindowX)
		c.AdmittedX = math.Max(c.AdmittedX, f.AdmittedX)
		c.RejectedPct = math.Max(c.RejectedPct, h.RejectedPct)
		c.RoundTripPct = math.Max(c.RoundTripPct, h.RoundTripPct)
		c.StoreCallsPerSec = math.Max(c.StoreCallsPerSec, storeCalls(a.honest[k], adviseHonest*q.Window))
		spread := f.WorstWindowX
		if rs := a.spread[k]; len(rs) > 0 {
			spread = sim.Mean(rs).WorstWindowX
		}
		c.SpreadWorstWindowX = math.Max(c.SpreadWorstWindowX, spread)
		if !info.NoSync {
			c.SyncsPerSec = math.Max(c.SyncsPerSec, float64(k)/sync.Seconds())
		}
	}
	return c
}

// storeCalls is the store calls (syncs and round trips) per second of
// runs of length d, on average.
func storeCalls(rs []sim.Result, d time.Duration) float64 {
	var n int64
	for _, r := range rs {
		n += r.Syncs + r.RoundTrips
	}
	return float64(n) / float64(len(rs)) / d.Seconds()
}

// Rank orders candidates by the budgets: those within every budget first,
// by their score (each figure as a share of its budget, summed: lower is
// cheaper), then the longer Δ (fewer syncs); the others after, by how far
// the worst of their figures passes its budget. It fills Fits, Score and
// Why.
func Rank(cands []Candidate, b Budgets) []Candidate {
	out := append([]Candidate(nil), cands...)
	for i := range out {
		c := &out[i]
		over, rej, rt := share(c.WorstWindowX-1, b.OverX-1), share(c.RejectedPct, b.RejectPct), share(c.RoundTripPct, b.RoundTrips)
		calls := share(c.StoreCallsPerSec, b.StoreCalls)
		c.Fits = over <= 1 && rej <= 1 && rt <= 1 && calls <= 1
		c.Score = over + rej + rt + calls
		if !c.Fits {
			c.Score = max(over, rej, rt, calls)
		}
		c.Why = why(*c, b)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, c := out[i], out[j]
		switch {
		case a.Fits != c.Fits:
			return a.Fits
		case a.Score != c.Score:
			return a.Score < c.Score
		}
		return a.Sync > c.Sync
	})
	return out
}

// share is x as a share of budget; a zero budget accepts only zero.
func share(x, budget float64) float64 {
	x = math.Max(x, 0)
	switch {
	case budget > 0:
		return x / budget
	case x > 1e-9:
		return math.Inf(1)
	}
	return 0
}

// why says in one line what places c where it is.
func why(c Candidate, b Budgets) string {
	figs := fmt.Sprintf("worst window %.3f × L (budget %.3g), honest rejections %.3f%% (budget %.3g%%), round trips %.2f%% (budget %.3g%%), "+
		"store calls %.3g per key per second (budget %.3g)",
		c.WorstWindowX, b.OverX, c.RejectedPct, b.RejectPct, c.RoundTripPct, b.RoundTrips, c.StoreCallsPerSec, b.StoreCalls)
	if c.Fits {
		return fmt.Sprintf("within every budget: %s; each figure as a share of its budget sums to %.2f", figs, c.Score)
	}
	var missed []string
	if c.WorstWindowX > b.OverX {
		missed = append(missed, "over-admission")
	}
	if c.RejectedPct > b.RejectPct {
		missed = append(missed, "honest rejections")
	}
	if c.RoundTripPct > b.RoundTrips {
		missed = append(missed, "round trips")
	}
	if share(c.StoreCallsPerSec, b.StoreCalls) > 1 {
		missed = append(missed, "store calls")
	}
	return fmt.Sprintf("misses the %s budget: %s", strings.Join(missed, " and "), figs)
}
