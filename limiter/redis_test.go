package limiter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// worst returns the most timestamps in any interval (t-W, t].
func worst(ts []int64, w time.Duration) int {
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	best, lo := 0, 0
	for hi, t := range ts {
		for ts[lo] <= t-int64(w) {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// flood drives rate requests per second, evenly over the limiters, for d,
// and returns the admitted decisions and the longest Allow call.
func flood(t *testing.T, ls []*Limiter, key string, rate float64, d time.Duration) ([]Decision, time.Duration) {
	var mu sync.Mutex
	var admitted []Decision
	var longest time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	per := rate / float64(len(ls))
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				at := start.Add(time.Duration(float64(i) / per * float64(time.Second)))
				if at.Sub(start) >= d {
					return
				}
				time.Sleep(time.Until(at))
				t0 := time.Now()
				dec := l.Allow(context.Background(), key)
				took := time.Since(t0)
				mu.Lock()
				longest = max(longest, took)
				if dec.Allowed {
					admitted = append(admitted, dec)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return admitted, longest
}

// Four limiters on one real redis-server under a flood: every design holds
// what it promises, and shared-counter admits what the simulator predicts.
func TestFleetOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	const (
		k     = 4
		limit = 100
		win   = 2 * time.Second
		delta = 100 * time.Millisecond
		rate  = 1000.0 // requests per second: M = 20, x = M Δ / W = 1
		run   = 6 * time.Second
	)
	// The exact designs and shared-counter again with the window in 20
	// counters of 100 ms: the guarantee holds, and the simulator, told of
	// the counters, still predicts.
	type run1 struct {
		name    string
		buckets int
	}
	var runs []run1
	for _, name := range slices.Concat(design.StudyDesigns, design.OwnDesigns) {
		runs = append(runs, run1{name, 0})
	}
	for _, name := range []string{"central-log", "lease-ask", "shared-counter"} {
		runs = append(runs, run1{name, 20})
	}
	for _, r := range runs {
		name, buckets := r.name, r.buckets
		sub := name
		if buckets > 0 {
			sub = fmt.Sprintf("%s/counters-%d", name, buckets)
		}
		t.Run(sub, func(t *testing.T) {
			t.Parallel()
			var ls []*Limiter
			for i := 0; i < k; i++ {
				st, err := redisstore.Dial(context.Background(), srv.Addr, redisstore.Options{Prefix: "it:"})
				if err != nil {
					t.Fatal(err)
				}
				l, err := New(Config{Design: name, Limit: limit, Window: win, WindowBuckets: buckets, Sync: delta, Gateways: k, Gateway: i, Store: st, Logger: quietLog, Fleet: sub})
				if err != nil {
					t.Fatal(err)
				}
				ls = append(ls, l)
				defer st.Close()
				defer l.Close()
			}
			adm, longest := flood(t, ls, "fleet-"+sub, rate, run)
			ts := make([]int64, len(adm))
			start := int64(1<<63 - 1)
			for i, d := range adm {
				ts[i] = d.At
				start = min(start, d.At)
			}
			w := worst(ts, win)
			// Decisions carry the gateway's time, read before the store
			// call; calls can reach the store in another order than their
			// times, by up to the longest call plus one tick of the shared
			// clock. Over windows shortened by that much the store's
			// guarantee holds exactly on the gateways' times.
			flight := longest + time.Millisecond
			wExact := worst(ts, win-flight)
			after := 0
			for _, t0 := range ts {
				if t0 >= start+int64(win) {
					after++
				}
			}
			x := float64(after) / (float64(run-win) / float64(win)) / limit
			t.Logf("%s: %d admitted in %v, admitted_x %.2f, worst window %d, worst window of W-%v %d (L = %d)",
				name, len(adm), run, x, w, flight.Round(time.Microsecond), wExact, limit)
			switch name {
			case "lease", "lease-ask", "central-log":
				if wExact > limit {
					t.Fatalf("%s admitted %d in one window of W-%v, over L = %d", name, wExact, flight, limit)
				}
			case "shared-counter":
				var simX float64
				const seeds = 10
				for s := uint64(1); s <= seeds; s++ {
					r, err := sim.Run(sim.Params{Design: name, Gateways: k, Sync: delta, Limit: limit, Window: win, WindowBuckets: buckets,
						Traffic: sim.Traffic{Kind: sim.Flood, Factor: rate * win.Seconds() / limit}, Duration: run, Seed: s})
					if err != nil {
						t.Fatal(err)
					}
					simX += r.AdmittedX / seeds
				}
				// The live fleet adds Redis round trips and timer jitter to
				// Δ, which the model has not: allow it 25% either way.
				t.Logf("simulator, same design, K, Δ and flood: admitted_x %.2f", simX)
				if x < 0.75*simX || x > 1.25*simX {
					t.Fatalf("live admitted_x %.2f, simulator %.2f: more than 25%% apart", x, simX)
				}
			}
		})
	}
}

// The redis-server dies under load and comes back: no Allow waits longer
// than the timeout, the fallback stays within its quota, and afterwards the
// store holds every admit exactly once.
func TestRedisFailureAndRecovery(t *testing.T) {
	for _, name := range []string{"central-log", "shared-counter", "headroom"} {
		t.Run(name, func(t *testing.T) {
			srv := redistest.StartPersistent(t)
			const (
				k       = 2
				limit   = 100
				timeout = 50 * time.Millisecond
			)
			var ls []*Limiter
			var st0 *redisstore.Store
			for i := 0; i < k; i++ {
				st, err := redisstore.Dial(context.Background(), srv.Addr, redisstore.Options{Prefix: "ft:"})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				st0 = st
				l, err := New(Config{Design: name, Limit: limit, Window: time.Minute, Sync: 50 * time.Millisecond,
					Gateways: k, Gateway: i, Store: st, Timeout: timeout, Logger: quietLog})
				if err != nil {
					t.Fatal(err)
				}
				ls = append(ls, l)
			}
			key := "failure-" + name
			type tally struct {
				admitted, degradedAdmits, before int
				slowest                          time.Duration
			}
			tallies := make([]tally, k)
			phase := make(chan int) // 1: outage starts, 2: over
			var wg sync.WaitGroup
			stopLoad := make(chan struct{})
			for i, l := range ls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tk := time.NewTicker(4 * time.Millisecond)
					defer tk.Stop()
					for {
						select {
						case <-stopLoad:
							return
						case <-tk.C:
						}
						start := time.Now()
						d := l.Allow(context.Background(), key)
						tl := &tallies[i]
						tl.slowest = max(tl.slowest, time.Since(start))
						if d.Allowed {
							tl.admitted++
							if d.Degraded {
								tl.degradedAdmits++
							} else if tl.degradedAdmits == 0 {
								tl.before++
							}
						}
					}
				}()
			}
			go func() {
				time.Sleep(150 * time.Millisecond)
				srv.Down()
				phase <- 1
				time.Sleep(time.Second)
				srv.Restart()
				phase <- 2
			}()
			<-phase
			<-phase
			// Let the fleet notice and sync again.
			deadline := time.Now().Add(5 * time.Second)
			for _, l := range ls {
				for l.Stats().Degraded && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
			}
			close(stopLoad)
			wg.Wait()
			total := 0
			quota := (limit + k - 1) / k
			for i, l := range ls {
				if err := l.Close(); err != nil {
					t.Fatalf("limiter %d: final sync: %v", i, err)
				}
				tl := tallies[i]
				total += tl.admitted
				t.Logf("gateway %d: %d admitted (%d by the fallback), slowest Allow %v, store errors %d", i, tl.admitted, tl.degradedAdmits, tl.slowest, l.Stats().StoreErrors)
				if l.Stats().StoreErrors == 0 || l.Stats().Fallbacks == 0 {
					t.Fatalf("gateway %d never noticed the outage: %+v", i, l.Stats())
				}
				// Slack for the scheduler (and the race detector) on top of the timeout.
				if tl.slowest > timeout+150*time.Millisecond {
					t.Fatalf("gateway %d: an Allow waited %v with a %v timeout", i, tl.slowest, timeout)
				}
			}
			for i, tl := range tallies {
				// Over the whole run (one window), a gateway's own admits
				// stay within what the design allowed before the outage
				// plus the fallback's quota ceil(L/K).
				if tl.degradedAdmits > max(0, quota-tl.before) {
					t.Fatalf("gateway %d: %d fallback admits after %d, quota %d", i, tl.degradedAdmits, tl.before, quota)
				}
			}
			// Admits of one gateway at one instant are one member standing
			// for all of them; Stamps counts each request.
			members, err := st0.Stamps(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			// Every admit is there once. A central check whose answer was
			// lost may have been applied by the store (its request was
			// rejected): at most one such phantom per failed check.
			phantoms := 0
			if name == "central-log" || name == "headroom" {
				for _, l := range ls {
					phantoms += int(l.Stats().StoreErrors)
				}
			}
			if len(members) < total || len(members) > total+phantoms {
				t.Fatalf("the store holds %d entries for %d admits (at most %d phantoms)", len(members), total, phantoms)
			}
			t.Logf("the store holds %d entries for %d admits", len(members), total)
		})
	}
}

// watchRuns numbers the watched designs a test registers.
var watchRuns atomic.Int64

// budgetWatch records, per gateway, the most requests headroom admitted
// locally between two pulls: B_j of docs/design.md's bound.
type budgetWatch struct {
	mu        sync.Mutex
	cur, most []int
}

func (w *budgetWatch) sum() int {
	w.mu.Lock()
	defer w.mu.Unlock()
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
		x.w.mu.Lock()
		x.w.cur[x.g] += n
		x.w.mu.Unlock()
	}
	return v, q
}

func (x watched) SyncPull(now int64, p *store.Pull) {
	x.Gateway.SyncPull(now, p)
	x.w.mu.Lock()
	x.w.most[x.g] = max(x.w.most[x.g], x.w.cur[x.g])
	x.w.cur[x.g] = 0
	x.w.mu.Unlock()
}

// honest drives Poisson arrivals at rate per second, each at a gateway
// picked at random, for d, and returns the decisions.
func honest(ls []*Limiter, key string, rate float64, d time.Duration, seed uint64) []Decision {
	rng := rand.New(rand.NewPCG(seed, 1))
	var mu sync.Mutex
	var out []Decision
	var wg sync.WaitGroup
	start := time.Now()
	for at := time.Duration(0); ; {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		if at >= d {
			break
		}
		l := ls[rng.IntN(len(ls))]
		time.Sleep(time.Until(start.Add(at)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := l.Allow(context.Background(), key)
			mu.Lock()
			out = append(out, dec)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// Four headroom limiters on one real redis-server, under a flood and under
// honest traffic: the live figures within 10% of the simulator's for the
// same K, Δ, window and traffic, and the worst window within the bound of
// docs/design.md, L plus the local budgets of one sync interval.
func TestHeadroomFleetOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	const (
		k     = 4
		limit = 100
		win   = 2 * time.Second
		delta = 100 * time.Millisecond
		run   = 6 * time.Second
	)
	// Each subtest's fleet runs a headroom whose local budgets a watch
	// records, registered here, before the subtests run in parallel (the
	// registry is not locked), under names this run alone uses.
	watches, designs := map[string]*budgetWatch{}, map[string]string{}
	for _, name := range []string{"flood", "honest"} {
		w := &budgetWatch{cur: make([]int, k), most: make([]int, k)}
		d := fmt.Sprintf("headroom-watched-%s-%d", name, watchRuns.Add(1))
		if err := design.Register(design.Info{Name: d, New: func(c design.Config) design.Gateway {
			return watched{design.NewHeadroom(c, design.HeadroomTolerance), w, c.Gateway}
		}}); err != nil {
			t.Fatal(err)
		}
		watches[name] = w
		designs[name] = d
	}
	// fleet starts the K limiters of one subtest.
	fleet := func(t *testing.T, name string) []*Limiter {
		d := designs[name]
		var ls []*Limiter
		for i := 0; i < k; i++ {
			st, err := redisstore.Dial(context.Background(), srv.Addr, redisstore.Options{Prefix: "hr:"})
			if err != nil {
				t.Fatal(err)
			}
			l, err := New(Config{Design: d, Limit: limit, Window: win, Sync: delta, Gateways: k, Gateway: i,
				Store: st, Logger: quietLog, Fleet: name})
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
			t.Cleanup(func() { l.Close(); st.Close() })
		}
		return ls
	}
	simulate := func(tr sim.Traffic, routing sim.Routing, d time.Duration) sim.Figures {
		var f sim.Figures
		const seeds = 10
		for s := uint64(1); s <= seeds; s++ {
			r, err := sim.Run(sim.Params{Design: "headroom", Gateways: k, Sync: delta, Limit: limit, Window: win,
				Traffic: tr, Routing: routing, Duration: d, Seed: s})
			if err != nil {
				t.Fatal(err)
			}
			f.Add(r.Figures)
		}
		f.Div(seeds)
		return f
	}
	t.Run("flood", func(t *testing.T) {
		t.Parallel()
		const rate = 1000.0 // M = 20
		w := watches["flood"]
		ls := fleet(t, "flood")
		adm, longest := flood(t, ls, "hr-flood", rate, run)
		ts := make([]int64, len(adm))
		for i, d := range adm {
			ts[i] = d.At
		}
		wExact := worst(ts, win-longest-time.Millisecond)
		x := float64(len(adm)) / (float64(run) / float64(win)) / limit
		f := simulate(sim.Traffic{Kind: sim.Flood, Factor: rate * win.Seconds() / limit}, sim.Even, run)
		bound := limit + w.sum()
		t.Logf("live: admitted_x %.3f, worst window %d (bound %d); simulator: admitted_x %.3f, worst window %.0f",
			x, wExact, bound, f.AdmittedX, f.WorstWindowX*limit)
		if x < 0.9*f.AdmittedX || x > 1.1*f.AdmittedX {
			t.Fatalf("live admitted_x %.3f, simulator %.3f: more than 10%% apart", x, f.AdmittedX)
		}
		if wExact > bound {
			t.Fatalf("worst window %d over the bound %d", wExact, bound)
		}
	})
	t.Run("honest", func(t *testing.T) {
		t.Parallel()
		ls := fleet(t, "honest")
		var trips0 int64
		for _, l := range ls {
			trips0 += l.Stats().RoundTrips
		}
		const rate = 0.8 * limit / 2.0 // steady:0.8 over W = 2 s
		const length = 20 * time.Second
		decs := honest(ls, "hr-honest", rate, length, 7)
		admitted, rejected := 0, 0
		for _, d := range decs {
			if d.Allowed {
				admitted++
			} else {
				rejected++
			}
		}
		var trips int64
		for _, l := range ls {
			trips += l.Stats().RoundTrips
		}
		trips -= trips0
		live := 100 * float64(trips) / float64(len(decs))
		liveRej := 100 * float64(rejected) / float64(len(decs))
		liveX := float64(admitted) / (float64(length) / float64(win)) / limit
		// One live run of ~800 requests swings with how close the count
		// comes to L: the simulator's seeds alone range over a factor of
		// several in round trips. One live run is one draw: admitted_x
		// within 10% of the seeds' mean, round trips and rejections within
		// three standard deviations of the seeds (or 10%, where they
		// hardly vary).
		var f sim.Figures
		var sum, sq [2]float64
		const seeds = 20
		for s := uint64(1); s <= seeds; s++ {
			r, err := sim.Run(sim.Params{Design: "headroom", Gateways: k, Sync: delta, Limit: limit, Window: win,
				Traffic: sim.Traffic{Kind: sim.Steady, Factor: 0.8}, Duration: length, Seed: s})
			if err != nil {
				t.Fatal(err)
			}
			f.Add(r.Figures)
			for i, v := range []float64{r.RoundTripPct, r.RejectedPct} {
				sum[i] += v
				sq[i] += v * v
			}
		}
		f.Div(seeds)
		var sd [2]float64
		for i := range sd {
			m := sum[i] / seeds
			sd[i] = math.Sqrt(max(sq[i]/seeds-m*m, 0) * seeds / (seeds - 1))
		}
		t.Logf("live: %d requests, admitted_x %.3f, %.2f%% rejected, %.2f%% round trips; simulator over %d seeds: admitted_x %.3f, "+
			"rejected %.2f%% (sd %.2f), round trips %.2f%% (sd %.2f)",
			len(decs), liveX, liveRej, live, seeds, f.AdmittedX, f.RejectedPct, sd[1], f.RoundTripPct, sd[0])
		if liveX < 0.9*f.AdmittedX || liveX > 1.1*f.AdmittedX {
			t.Fatalf("live admitted_x %.3f, simulator %.3f: more than 10%% apart", liveX, f.AdmittedX)
		}
		for i, c := range []struct {
			what       string
			live, simu float64
		}{{"round trips", live, f.RoundTripPct}, {"rejections", liveRej, f.RejectedPct}} {
			if d := math.Abs(c.live - c.simu); d > max(3*sd[i], 0.1*c.simu) {
				t.Fatalf("live %s %.2f%%, simulator %.2f%% (sd over its seeds %.2f): more than three sd apart", c.what, c.live, c.simu, sd[i])
			}
		}
	})
}
