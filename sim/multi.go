package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// Limit is a further limit on a run's key (Params.Limits): Requests per
// Window, counted in the run's window kind.
type Limit struct {
	Requests int
	Window   time.Duration
}

// String is the limit as --also-limit takes it, e.g. 10/1s.
func (l Limit) String() string { return strconv.Itoa(l.Requests) + "/" + l.Window.String() }

// ParseLimit reads a limit written N/W, e.g. 10/1s or 250/24h.
func ParseLimit(s string) (Limit, error) {
	n, w, ok := strings.Cut(s, "/")
	if !ok {
		return Limit{}, fmt.Errorf("limit %q: want N/WINDOW, e.g. 10/1s", s)
	}
	req, err := strconv.Atoi(n)
	if err != nil {
		return Limit{}, fmt.Errorf("limit %q: %q is not a whole number of requests", s, n)
	}
	win, err := time.ParseDuration(w)
	if err != nil {
		return Limit{}, fmt.Errorf("limit %q: %q is not a duration, e.g. 1s or 24h", s, w)
	}
	return Limit{req, win}, nil
}

// LimitResult is a run's figures against one of Params.Limits.
type LimitResult struct {
	Limit        string // e.g. 10/1s
	Admitted     int64
	AdmittedX    float64 // admits after the limit's first window, per window, over its requests
	WorstWindowX float64 // the most admits any sliding window of it held, over its requests
}

// validateLimits reports what is wrong with p.Limits.
func (p Params) validateLimits() error {
	if len(p.Limits) == 0 {
		return nil
	}
	if p.Faults.Active() {
		return fmt.Errorf("several limits: a run with faults takes one limit")
	}
	if len(p.Limits) > MaxLimits-1 {
		return fmt.Errorf("several limits: %d further limits, at most %d", len(p.Limits), MaxLimits-1)
	}
	for _, l := range p.Limits {
		switch {
		case l.Requests < 1 || l.Requests > MaxLimit:
			return fmt.Errorf("limit %v: must allow between 1 and %d requests", l, MaxLimit)
		case l.Window <= 0:
			return fmt.Errorf("limit %v: the window must be positive", l)
		case p.Duration <= l.Window:
			return fmt.Errorf("limit %v: the duration %v must be longer than its window, since figures are taken after the first window", l, p.Duration)
		}
		if err := p.limitSpec(l).Validate(); err != nil {
			return fmt.Errorf("limit %v: %w", l, err)
		}
	}
	return nil
}

// MaxLimits is the most limits a key carries, Params.Limit included.
const MaxLimits = 8

// limitSpec is the window of a further limit.
func (p Params) limitSpec(l Limit) window.Spec {
	return window.Spec{Size: l.Window, Kind: p.WindowKind, Buckets: p.WindowBuckets}
}

// multiRun is a run's state for a key with several limits: each gateway's
// Multi, each limit's store key and, past the first, its meter.
type multiRun struct {
	gws    []*design.Multi
	keys   []*memstore.Key
	meters []*meter
	as     []store.Answer
}

// newMulti sets up r's further limits: every gateway runs one design per
// limit, the first being r.gws's.
func (r *runner) newMulti() {
	p := r.p
	mr := &multiRun{keys: []*memstore.Key{r.key}, as: make([]store.Answer, 1+len(p.Limits))}
	for _, l := range p.Limits {
		k := memstore.NewKey(l.Requests, p.limitSpec(l))
		if r.info.RateLeases != "" {
			k.SetRateLeases(r.info.RateLeases == catalog.RateFair)
		}
		mr.keys = append(mr.keys, k)
		q := p
		q.Limit, q.Window = l.Requests, l.Window
		mr.meters = append(mr.meters, newMeter(q, false))
	}
	mr.gws = make([]*design.Multi, len(r.gws))
	for g, first := range r.gws {
		if first == nil { // a gateway joining later (faults, which several limits do not take)
			continue
		}
		parts := []design.Gateway{first}
		for _, l := range p.Limits {
			c := r.gatewayConfig(g)
			c.Limit, c.Window = l.Requests, p.limitSpec(l)
			parts = append(parts, r.info.New(c))
		}
		mr.gws[g] = design.NewMulti(parts)
	}
	r.multi = mr
}

// arriveMulti is arrive for a key with several limits: every limit's
// queries go to the store in one round trip, answered together.
func (r *runner) arriveMulti(t int64, g, c int) {
	mg := r.multi.gws[g]
	held := r.heldBefore(g)
	v := mg.Decide(t, 1)
	if v == design.Ask {
		r.m.roundTrips++
		memstore.AnswerAll(r.multi.keys, t, g, mg.Queries(), r.multi.as)
		for i, q := range mg.Queries() {
			if q.Kind != 0 {
				pushed := 0
				if q.Carry != nil {
					pushed = len(q.Carry.Admits)
				}
				r.m.storeCall(pushed, 0, r.multi.keys[i].Entries())
			}
		}
		v = mg.Resume(t, 1, r.multi.as)
	}
	r.heldAfter(t, g, held)
	r.m.record(t, v, c)
	for _, m := range r.multi.meters {
		m.record(t, v, c)
	}
	if r.trace != nil {
		r.trace(t, g, v)
	}
}

// syncMulti is gateway g's sync at t of every limit of the key.
func (r *runner) syncMulti(t int64, g int) {
	held := r.heldBefore(g)
	for i, part := range r.multi.gws[g].Parts {
		part.SyncPush(t, &r.push)
		r.multi.keys[i].SyncTo(t, &r.push, &r.pull)
		r.m.storeCall(len(r.push.Admits), len(r.pull.Expiring), r.multi.keys[i].Entries())
		part.SyncPull(t, &r.pull)
	}
	r.m.performed++
	r.heldAfter(t, g, held)
}

// limitResults are the figures against each further limit.
func (mr *multiRun) limitResults(p Params, end int64) []LimitResult {
	var out []LimitResult
	for i, m := range mr.meters {
		res := m.result(end)
		out = append(out, LimitResult{Limit: p.Limits[i].String(), Admitted: res.Admitted,
			AdmittedX: res.AdmittedX, WorstWindowX: res.WorstWindowX})
	}
	return out
}
