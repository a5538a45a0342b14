package limiter

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
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
		return redisFleet(t, srv.Addr, "pm:", k, Config{Design: "permit", Limit: limit, Window: win, Sync: delta, Fleet: name})
	}
	params := sim.Params{Design: "permit", Gateways: k, Sync: delta, Limit: limit, Window: win}
	t.Run("flood", func(t *testing.T) {
		t.Parallel()
		const rate = 1000.0 // M = 20
		p := params
		p.Traffic, p.Duration = sim.Traffic{Kind: sim.Flood, Factor: rate * win.Seconds() / limit}, 6*time.Second
		floodAgainst(t, fleet(t, "flood"), "pm-flood", rate, p, func() int { return bound })
	})
	t.Run("honest", func(t *testing.T) {
		t.Parallel()
		ls := fleet(t, "honest")
		const length = 20 * time.Second
		live := liveHonest(ls, "pm-honest", 0.8*limit/win.Seconds(), length, win)
		p := params
		p.Traffic, p.Duration = sim.Traffic{Kind: sim.Steady, Factor: 0.8}, length
		live.against(t, p, 20)
		if w := worst(live.admits, win-ls[0].Config().Timeout-time.Millisecond); w > bound {
			t.Errorf("honest worst window %d over the bound %d", w, bound)
		}
	})
}

// permit on Redis with a window in buckets is refused when the limiter is
// made, not at its first sync; on the embedded store it runs.
func TestPermitRefusesBucketsOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}, Prefix: "pb:"})
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
