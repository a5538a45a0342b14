package limiter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/internal/redisinspect"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/internal/slowproxy"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// The slow-store suite: a fleet of three gateways on a real redis-server
// behind a proxy that makes every round trip late, now and then or always.

// slowFleet is the suite's fleet: K gateways of one design, its limit and
// timing.
type slowFleet struct {
	k       int
	limit   int
	window  time.Duration
	sync    time.Duration
	timeout time.Duration
	// a watched headroom for each scenario, registered beforehand (the
	// registry is not locked), and its watch
	headroomWatched map[string]string
	watches         map[string]*budgetWatch
}

// slowSuite's window is long beside the staleness of a view (a few Δ), as
// a minute is beside a second, so that what a falling-back gateway has not
// heard of is a small part of L.
var slowSuite = slowFleet{k: 3, limit: 200, window: 10 * time.Second, sync: 200 * time.Millisecond, timeout: 50 * time.Millisecond}

// slowness is how a scenario makes the store slow while the traffic runs.
type slowness struct {
	name  string
	stall time.Duration // the longest delay it sets
	run   func(p *slowproxy.Proxy, stop <-chan struct{})
}

// warm is how long the traffic runs before the store turns slow: the
// flood has filled its key by then, and the views hold its count.
const warm = 5 * time.Second

var slownesses = []slowness{
	{"none", 0, func(p *slowproxy.Proxy, stop <-chan struct{}) {}},
	// a round trip 60, 200 or 1,000 ms late for a moment, every 1.5 s
	{"spikes", time.Second, func(p *slowproxy.Proxy, stop <-chan struct{}) {
		if warmUp(stop) {
			p.Spikes(stop, 1500*time.Millisecond, 150*time.Millisecond, 60*time.Millisecond, 200*time.Millisecond, time.Second)
		}
	}},
	// every round trip late by twice the request timeout
	{"slow", 2 * slowSuite.timeout, func(p *slowproxy.Proxy, stop <-chan struct{}) {
		if warmUp(stop) {
			p.SetDelay(2 * slowSuite.timeout)
		}
	}},
}

// warmUp waits warm, or until stop; it reports whether warm passed.
func warmUp(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	case <-time.After(warm):
		return true
	}
}

// watchHeadroom registers a headroom whose local budgets a watch records
// for each scenario.
func (f *slowFleet) watchHeadroom(t *testing.T) {
	f.headroomWatched, f.watches = map[string]string{}, map[string]*budgetWatch{}
	for _, s := range slownesses {
		w := &budgetWatch{cur: make([]int, f.k), most: make([]int, f.k)}
		name := fmt.Sprintf("headroom-slow-%s-%d", s.name, watchRuns.Add(1))
		if err := registerTest(design.Info{Name: name, FineBuckets: true, New: func(c design.Config) design.Gateway {
			return watched{design.NewHeadroom(c, design.HeadroomTolerance), w, c.Gateway}
		}}); err != nil {
			t.Fatal(err)
		}
		f.headroomWatched[s.name], f.watches[s.name] = name, w
	}
}

// gwDecision is a decision and the gateway that made it.
type gwDecision struct {
	Decision
	gw int
}

// slowRun is what one run of the fleet saw.
type slowRun struct {
	honest, honestRejected, fellRejected int // honest requests; rejected; rejected by the fallback
	flood                                []gwDecision
	worstFlood                           int       // the flood key's worst window of W − F on the gateways' clocks
	fallbackAdmits                       int       // the flood key's admits by the fallback
	contacts                             [][]int64 // per gateway: when its view of the store was last refreshed
	longestSync                          time.Duration
	unheard                              int          // at most what a falling-back gateway had not heard of (unheard)
	budgets                              *budgetWatch // headroom's local budgets, when the design is headroom
	stats                                Stats
}

// watch records in r each successful sync of l, gateway i: when its view
// was refreshed, and the longest sync.
func (r *slowRun) watch(l *Limiter, i int, mu *sync.Mutex) {
	l.OnSync(func(took time.Duration, err error) {
		if err == nil {
			mu.Lock()
			r.contacts[i] = append(r.contacts[i], time.Now().Add(-took).UnixNano())
			r.longestSync = max(r.longestSync, took)
			mu.Unlock()
		}
	})
}

// gateways starts f's K gateways of design dsg on the store behind p, with
// the same sync phases in every scenario (so that runs differ by the
// store's delays, not by when each gateway syncs), recording each
// successful sync in r.
func (f slowFleet) gateways(t *testing.T, p *slowproxy.Proxy, dsg, prefix string, r *slowRun, mu *sync.Mutex) ([]*Limiter, *redisstore.Store, error) {
	var ls []*Limiter
	var first *redisstore.Store
	r.contacts = make([][]int64, f.k)
	for i := range f.k {
		st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{p.Addr}, Prefix: prefix})
		if err != nil {
			return nil, nil, err
		}
		t.Cleanup(func() { st.Close() })
		if first == nil {
			first = st
		}
		l, err := New(Config{Design: dsg, Limit: f.limit, Window: f.window, Sync: f.sync, Timeout: f.timeout,
			Gateways: f.k, Gateway: i, Store: st, Logger: quietLog, Fleet: prefix})
		if err != nil {
			for _, l := range ls { // none may go on writing r once the run gives up
				l.Close()
			}
			return nil, nil, err
		}
		r.watch(l, i, mu)
		ls = append(ls, l)
	}
	return ls, first, nil
}

// run drives honest keys and a flooded key through f's gateways for d while
// the store is slow as s says, then closes the gateways (their last pushes
// and withdrawals reach the store) and checks that the store holds
// exactly the admits clients were told of, key by key. It calls ready once
// its gateways are made (or failed), before any traffic.
func (f slowFleet) run(t *testing.T, srv *redistest.Server, name string, s slowness, d time.Duration, ready func()) slowRun {
	var r slowRun
	ready = sync.OnceFunc(ready)
	defer ready() // the others wait for it
	p := slowproxy.Start(t, srv.Addr)
	dsg := name
	if name == "headroom" { // its local budgets, B_j of its bound
		dsg, r.budgets = f.headroomWatched[s.name], f.watches[s.name]
	}
	var mu sync.Mutex
	ls, st, err := f.gateways(t, p, dsg, fmt.Sprintf("slow:%s:%s:", name, s.name), &r, &mu)
	ready()
	if err != nil {
		t.Errorf("%s, %s: %v", name, s.name, err)
		return r
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); s.run(p, stop) }()
	told := f.traffic(ls, d, &r, &mu, name == "central-log")
	close(stop)
	<-done
	p.SetDelay(0)
	for i, l := range ls {
		st := l.Stats()
		r.stats.Abandoned += st.Abandoned
		r.stats.Fallbacks += st.Fallbacks
		r.stats.StoreErrors += st.StoreErrors
		if err := l.Close(); err != nil {
			t.Errorf("%s, %s, gateway %d: the last sync: %v", name, s.name, i, err)
		}
	}
	// The store keeps a window: compare what it holds and what clients
	// were told from a second into the window of the last sync on.
	from := time.Now().Add(-f.window + time.Second).UnixNano()
	for key, ats := range told {
		stamps, err := redisinspect.Of(st).Stamps(context.Background(), key)
		if err != nil {
			t.Errorf("%s, %s: %v", name, s.name, err)
			continue
		}
		if held, n := countFrom(stamps, from), countFrom(ats, from); held != n {
			t.Errorf("%s, %s, key %s: the store holds %d admits, clients were told of %d", name, s.name, key, held, n)
		}
	}
	ts := make([]int64, len(r.flood))
	for i, dec := range r.flood {
		ts[i] = dec.At.UnixNano()
	}
	slices.Sort(ts)
	r.worstFlood = worst(slices.Clone(ts), f.window-f.timeout-time.Millisecond)
	r.unheard = r.mostUnheard(ts, f.sync+r.longestSync)
	return r
}

// traffic drives five honest keys at half their limit and a flood at five
// times it through ls for d, each request at a gateway drawn at random, and
// returns the times of the admits clients were told of, by key. With
// answers set, every decision not made by the fallback is an answer of the
// store, which refreshes its gateway's view (central-log).
func (f slowFleet) traffic(ls []*Limiter, d time.Duration, r *slowRun, mu *sync.Mutex, answers bool) map[string][]int64 {
	told := map[string][]int64{}
	var wg sync.WaitGroup
	start := time.Now()
	drive := func(key string, rate float64, seed uint64, see func(gwDecision)) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 3))
		for at := time.Duration(0); ; {
			at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
			if at >= d {
				return
			}
			time.Sleep(time.Until(start.Add(at)))
			gw := rng.IntN(len(ls))
			dec := gwDecision{mustAllow(ls[gw].Allow(context.Background(), key)), gw}
			mu.Lock()
			if dec.Allowed {
				told[key] = append(told[key], dec.At.UnixNano())
			}
			if answers && !dec.Degraded {
				r.contacts[gw] = append(r.contacts[gw], dec.At.UnixNano())
			}
			see(dec)
			mu.Unlock()
		}
	}
	rate := float64(f.limit) / f.window.Seconds()
	for i := range 5 {
		wg.Add(1)
		go drive(fmt.Sprintf("honest-%d", i), rate/2, uint64(i+1), func(dec gwDecision) {
			r.honest++
			if !dec.Allowed {
				r.honestRejected++
				if dec.Degraded {
					r.fellRejected++
				}
			}
		})
	}
	wg.Add(1)
	go drive("flood", 5*rate, 99, func(dec gwDecision) {
		if dec.Allowed {
			r.flood = append(r.flood, dec)
			if dec.Degraded {
				r.fallbackAdmits++
			}
		}
	})
	wg.Wait()
	return told
}

// mostUnheard bounds, over the flood's fallback admits, what the gateway
// that made one had not heard of: the flood admits since its view was last
// refreshed (a sync's start, or an answer), less the longest a peer's admit
// takes to reach the store (lag: a sync interval and the longest sync).
// Admits are ts, ascending.
func (r *slowRun) mostUnheard(ts []int64, lag time.Duration) int {
	for _, c := range r.contacts {
		slices.Sort(c)
	}
	most := 0
	for _, dec := range r.flood {
		if !dec.Degraded {
			continue
		}
		c := r.contacts[dec.gw]
		i, _ := slices.BinarySearch(c, dec.At.UnixNano()+1)
		since := int64(0) // no contact yet: every admit is unheard
		if i > 0 {
			since = c[i-1] - int64(lag)
		}
		lo, _ := slices.BinarySearch(ts, since)
		hi, _ := slices.BinarySearch(ts, dec.At.UnixNano()+1)
		most = max(most, hi-lo)
	}
	return most
}

// A fleet of three gateways, for every design, on a real redis-server behind
// a proxy: with no delay, with spikes of 60, 200 and 1,000 ms, and with
// every round trip twice the request timeout late. In every run the store
// holds exactly the admits clients were told of; no honest request is
// rejected because its call timed out; honest rejections stay within a
// percentage point of the run without delay (but lease's, which follow the
// scheduler, checkSlowRuns); and the exact designs keep
// the flood within the bound docs/design.md states. The runs sleep more
// than they work, so all of them run at once.
func TestSlowStore(t *testing.T) {
	srv := redistest.Start(t)
	const d = 24 * time.Second
	suite := slowSuite
	suite.watchHeadroom(t)
	names := design.Sliding()
	runs := make([][]slowRun, len(names))
	// Every fleet's gateways are made before any traffic starts: under
	// the race detector on a busy machine, the traffic of the fleets
	// already running kept the last gateways' claims waiting past their
	// timeouts, for seconds on end.
	var wg, made sync.WaitGroup
	made.Add(len(names) * len(slownesses))
	ready := func() { made.Done(); made.Wait() }
	for i, name := range names {
		runs[i] = make([]slowRun, len(slownesses))
		for j, s := range slownesses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runs[i][j] = suite.run(t, srv, name, s, d, ready)
			}()
		}
	}
	wg.Wait()
	for i, name := range names {
		t.Run(name, func(t *testing.T) { checkSlowRuns(t, name, runs[i]) })
	}
}

// exactDesigns are the designs whose store decides every admit or grants
// it, or whose gateways admit alone only within their budgets (headroom).
var exactDesigns = []string{"central-log", "lease", "lease-ask", "headroom"}

// checkSlowRuns holds one design's runs to what TestSlowStore promises.
func checkSlowRuns(t *testing.T, name string, runs []slowRun) {
	base := runs[0]
	baseRej := 100 * float64(base.honestRejected) / float64(max(base.honest, 1))
	for i, r := range runs {
		rej := 100 * float64(r.honestRejected) / float64(max(r.honest, 1))
		t.Logf("%s: honest %d, rejected %.2f%% (%d by the fallback); flood: admitted %d, worst window %d of L = %d (%d by the fallback, "+
			"%d unheard at most); abandoned %d, fallbacks %d, store errors %d, longest sync %v",
			slownesses[i].name, r.honest, rej, r.fellRejected, len(r.flood), r.worstFlood, slowSuite.limit, r.fallbackAdmits,
			r.unheard, r.stats.Abandoned, r.stats.Fallbacks, r.stats.StoreErrors, r.longestSync.Round(time.Millisecond))
		// On a quiet machine the fallback rejects no honest request. A
		// busy one starves the gateways' syncs, so the outages each one
		// sees are longer than the proxy's: 1 to 3 of 1,245 with two CPU
		// hogs beside the suite. The fallback is held to the same point
		// as every honest rejection.
		if fell := 100 * float64(r.fellRejected) / float64(max(r.honest, 1)); fell > 1 {
			t.Errorf("%s: %d honest requests (%.2f%%) rejected by the fallback, over 1%%", slownesses[i].name, r.fellRejected, fell)
		}
		// lease refuses alone once its slots run out, without asking, so
		// its honest rejections follow how late its syncs land, which a
		// busy machine sets as much as the store's delays do: with two CPU
		// hogs beside it, its run without delay alone rejected from 1.3% to
		// 5.2% of the same arrivals. It is held to the fallback's point
		// above, and the others to the run without delay.
		if name != "lease" && rej > baseRej+1 {
			t.Errorf("%s: honest rejections %.2f%%, more than 1 point over %.2f%% without delay", slownesses[i].name, rej, baseRej)
		}
		// docs/design.md, "The live limiter": a fallback adds at most the
		// rounding, K − 1, and the admits its views had not heard of
		bound := slowSuite.limit + slowSuite.k - 1 + r.unheard
		if r.budgets != nil {
			bound += r.budgets.sum() // headroom's own bound: L + the budgets
		}
		if slices.Contains(exactDesigns, name) && r.worstFlood > bound {
			t.Errorf("%s: %d admitted in a window of W − F, over L + K − 1 + %d unheard = %d", slownesses[i].name, r.worstFlood, r.unheard, bound)
		}
	}
}

// countFrom counts the times at or after from.
func countFrom(ts []int64, from int64) int {
	n := 0
	for _, t := range ts {
		if t >= from {
			n++
		}
	}
	return n
}
