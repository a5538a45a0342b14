package limiter

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// Sixteen permit limiters on one real redis-server (issue 33), under a
// flood and under honest traffic: admitted_x within 10% of the simulator's
// for the same K, Δ, window and traffic, round trips and rejections within
// three standard deviations of its seeds, and the worst window never above
// permit's bound, L + ⌊t·L⌋ (docs/design.md).
func TestPermitFleetOnRedis(t *testing.T) {
	t.Parallel() // mostly waiting on the clock: beside the package's other tests
	srv := redistest.Start(t)
	const (
		k     = 16
		limit = 100
		win   = 2 * time.Second
		delta = 100 * time.Millisecond
	)
	bound := limit + int(math.Floor(design.PermitTolerance*limit))
	fleet := func(t *testing.T, name string) []*Limiter {
		var ls []*Limiter
		for i := 0; i < k; i++ {
			st, err := redisstore.Dial(context.Background(), srv.Addr, redisstore.Options{Prefix: "pm:"})
			if err != nil {
				t.Fatal(err)
			}
			l, err := New(Config{Design: "permit", Limit: limit, Window: win, Sync: delta, Gateways: k, Gateway: i,
				Store: st, Logger: quietLog, Fleet: name})
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
			t.Cleanup(func() { l.Close(); st.Close() })
		}
		return ls
	}
	// simulate returns the simulator's mean figures over seeds, and the
	// standard deviation of round_trip_pct and rejected_pct over them.
	simulate := func(tr sim.Traffic, d time.Duration, seeds int) (sim.Figures, [2]float64) {
		var f sim.Figures
		var sum, sq [2]float64
		for s := 1; s <= seeds; s++ {
			r, err := sim.Run(sim.Params{Design: "permit", Gateways: k, Sync: delta, Limit: limit, Window: win,
				Traffic: tr, Duration: d, Seed: uint64(s)})
			if err != nil {
				t.Fatal(err)
			}
			f.Add(r.Figures)
			for i, v := range []float64{r.RoundTripPct, r.RejectedPct} {
				sum[i] += v
				sq[i] += v * v
			}
		}
		f.Div(float64(seeds))
		var sd [2]float64
		for i := range sd {
			m := sum[i] / float64(seeds)
			sd[i] = math.Sqrt(max(sq[i]/float64(seeds)-m*m, 0) * float64(seeds) / float64(seeds-1))
		}
		return f, sd
	}
	t.Run("flood", func(t *testing.T) {
		t.Parallel()
		const rate, run = 1000.0, 6 * time.Second // M = 20
		ls := fleet(t, "flood")
		r := flood(ls, "pm-flood", rate, run, false)
		adm := r.stamps()
		// windows shortened by a call's flight, as TestFleetOnRedis
		// explains; the fallback's share when a busy machine made calls late
		flight := ls[0].Config().Timeout + time.Millisecond
		wExact := worst(slices.Clone(adm), win-flight)
		b := bound
		if r.fallbackAdmits > 0 {
			b += k - 1 + r.mostUnheard(adm, delta+r.longestSync)
		}
		x := float64(len(adm)) / (float64(run) / float64(win)) / limit
		f, _ := simulate(sim.Traffic{Kind: sim.Flood, Factor: rate * win.Seconds() / limit}, run, 10)
		t.Logf("live: admitted_x %.3f, worst window %d (bound %d, %d by the fallback); simulator: admitted_x %.3f, worst window %.0f",
			x, wExact, b, r.fallbackAdmits, f.AdmittedX, f.WorstWindowX*limit)
		if x < 0.9*f.AdmittedX || x > 1.1*f.AdmittedX {
			t.Errorf("live admitted_x %.3f, simulator %.3f: more than 10%% apart", x, f.AdmittedX)
		}
		if wExact > b {
			t.Errorf("worst window %d over the bound %d", wExact, b)
		}
	})
	t.Run("honest", func(t *testing.T) {
		t.Parallel()
		ls := fleet(t, "honest")
		const rate = 0.8 * limit / 2.0 // steady:0.8 over W = 2 s
		const length = 20 * time.Second
		decs := honest(ls, "pm-honest", rate, length, 7)
		var admitted, rejected, trips int
		var ts []int64
		for _, d := range decs {
			if d.Allowed {
				admitted++
				ts = append(ts, d.At)
			} else {
				rejected++
			}
		}
		for _, l := range ls {
			trips += int(l.Stats().RoundTrips)
		}
		live := 100 * float64(trips) / float64(len(decs))
		liveRej := 100 * float64(rejected) / float64(len(decs))
		liveX := float64(admitted) / (float64(length) / float64(win)) / limit
		f, sd := simulate(sim.Traffic{Kind: sim.Steady, Factor: 0.8}, length, 20)
		t.Logf("live: %d requests, admitted_x %.3f, %.2f%% rejected, %.2f%% round trips, worst window %d; simulator over 20 seeds: "+
			"admitted_x %.3f, rejected %.2f%% (sd %.2f), round trips %.2f%% (sd %.2f)",
			len(decs), liveX, liveRej, live, worst(ts, win), f.AdmittedX, f.RejectedPct, sd[1], f.RoundTripPct, sd[0])
		if liveX < 0.9*f.AdmittedX || liveX > 1.1*f.AdmittedX {
			t.Errorf("live admitted_x %.3f, simulator %.3f: more than 10%% apart", liveX, f.AdmittedX)
		}
		for i, c := range []struct {
			what       string
			live, simu float64
		}{{"round trips", live, f.RoundTripPct}, {"rejections", liveRej, f.RejectedPct}} {
			if d := math.Abs(c.live - c.simu); d > max(3*sd[i], 0.1*c.simu) {
				t.Errorf("live %s %.2f%%, simulator %.2f%% (sd over its seeds %.2f): more than three sd apart", c.what, c.live, c.simu, sd[i])
			}
		}
		if w := worst(ts, win-ls[0].Config().Timeout-time.Millisecond); w > bound {
			t.Errorf("honest worst window %d over the bound %d", w, bound)
		}
	})
}

// permit on Redis with a window in buckets is refused when the limiter is
// made, not at its first sync; on the embedded store it runs.
func TestPermitRefusesBucketsOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	st, err := redisstore.Dial(context.Background(), srv.Addr, redisstore.Options{Prefix: "pb:"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := Config{Design: "permit", Limit: 100, Window: time.Minute, WindowBuckets: 60, Sync: time.Second, Store: st, Logger: quietLog}
	if l, err := New(cfg); err == nil || !strings.Contains(err.Error(), "WindowBuckets") {
		if l != nil {
			l.Close()
		}
		t.Fatalf("permit with buckets on Redis: %v, want refused", err)
	}
	cfg.Store = nil
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("permit with buckets on the embedded store: %v", err)
	}
	l.Close()
}
