package limiter

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/internal/redisinspect"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// burstAndMinute are a burst limit and a sustained one, as operators write
// them: 2 a second, 5 a minute.
var burstAndMinute = []Limit{{Requests: 5, Window: time.Minute}, {Requests: 2, Window: time.Second}}

// TestSeveralLimitsAlone runs every design alone on the embedded store under
// a burst and a sustained limit: neither is passed, a request the burst
// limit refuses spends none of the minute's, and the decision names the
// limit that binds.
func TestSeveralLimitsAlone(t *testing.T) {
	for _, name := range design.Names() {
		t.Run(name, func(t *testing.T) {
			info, _ := design.Lookup(name)
			kind := window.Sliding
			if info.FixedWindow {
				kind = window.Fixed
			}
			ck := newClock()
			st := memstore.New()
			l := mustNew(t, Config{Design: name, Now: ck.now, Store: st, WindowKind: kind})
			ctx := context.Background()
			var admits []int64
			for i := range 30 { // ten bursts of three, 200 ms apart
				if i%3 == 0 {
					ck.add(200 * time.Millisecond)
				}
				d, err := l.AllowLimits(ctx, "k", burstAndMinute, 1)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admits = append(admits, d.At.UnixNano())
					continue
				}
				if d.Limit != burstAndMinute[d.Bound].Requests || d.RetryAfter <= 0 {
					t.Fatalf("request %d: rejected with %+v", i, d)
				}
				if name == "lease" || name == "lease-ask" {
					l.SyncNow(ctx) // leases learn their arrivals at syncs
				}
			}
			if err := l.SyncNow(ctx); err != nil {
				t.Fatal(err)
			}
			for i, lim := range burstAndMinute {
				spec := window.Spec{Size: lim.Window, Kind: kind}
				if w := worstIn(admits, spec); w > lim.Requests {
					t.Errorf("limit %d/%v: %d admitted in one window", lim.Requests, lim.Window, w)
				}
				if kind == window.Fixed {
					continue // central-counter counts refused requests on the limit they passed
				}
				k := store.Key{Name: "k", Limit: lim.Requests, Window: spec, Part: i + 1}
				if got, want := st.Count(k, ck.now().UnixNano()), countFrom(admits, spec.Lo(ck.now().UnixNano())); got != want {
					t.Errorf("limit %d/%v: the store counts %d, %d were admitted in its window", lim.Requests, lim.Window, got, want)
				}
			}
			if len(admits) == 0 {
				t.Fatal("nothing admitted")
			}
		})
	}
}

// worstIn is the most admits any window of spec held.
func worstIn(ts []int64, spec window.Spec) int {
	if spec.Kind == window.Sliding {
		return worst(slices.Clone(ts), spec.Size)
	}
	best, n, lo := 0, 0, int64(0)
	for i, t := range ts {
		if i == 0 || spec.Lo(t) != lo {
			lo, n = spec.Lo(t), 0
		}
		n++
		best = max(best, n)
	}
	return best
}

func TestSeveralLimitsRefused(t *testing.T) {
	l := mustNew(t, Config{})
	ctx := context.Background()
	for _, c := range []struct {
		lims []Limit
		n    int
		want string
	}{
		{nil, 1, "no limit"},
		{[]Limit{{5, time.Second, 0}, {5, time.Second, 0}}, 1, "twice"},
		{[]Limit{{5, time.Second, 0}, {50, time.Minute, 10}}, 1, "buckets"},
		{[]Limit{{5, time.Second, 0}, {0, time.Minute, 0}}, 1, "at least 1"},
		{[]Limit{{5, time.Second, 0}, {50, time.Minute, 0}}, 0, "cost 0"},
		{slices.Repeat([]Limit{{5, time.Second, 0}}, MaxLimits+1), 1, "at most"},
	} {
		if _, err := l.AllowLimits(ctx, "k", c.lims, c.n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v cost %d: %v, want an error saying %q", c.lims, c.n, err, c.want)
		}
	}
	if l.Stats().Keys != 0 {
		t.Errorf("refused requests made %d keys", l.Stats().Keys)
	}
}

// roundTrips counts the commands and pipelines a Redis client sends: one
// each is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// TestSeveralLimitsOneRoundTrip holds central-log, whose every decision asks
// Redis, to one round trip per decision whatever the number of limits.
func TestSeveralLimitsOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	rt := &roundTrips{}
	rdb.AddHook(rt)
	ctx := context.Background()
	st, err := redisstore.New(ctx, redisstore.Options{Client: rdb, Prefix: "rt:"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := mustNew(t, Config{Design: "central-log", Store: st, Logger: quietLog, Timeout: 10 * time.Second})
	// open the connection first: its handshake is round trips of its own
	if _, err := l.AllowLimits(ctx, "warm", burstAndMinute, 1); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 4, MaxLimits} {
		var lims []Limit
		for i := range n {
			lims = append(lims, Limit{Requests: 1000 + i, Window: time.Minute})
		}
		for i := range 20 {
			before := rt.n.Load()
			d, err := l.AllowLimits(ctx, "key-"+itoa(n), lims, 1)
			if err != nil || !d.Allowed {
				t.Fatalf("%d limits, request %d: %+v %v", n, i, d, err)
			}
			if got := rt.n.Load() - before; got != 1 {
				t.Fatalf("%d limits, request %d: %d round trips to Redis, want 1", n, i, got)
			}
		}
	}
}

// TestSeveralLimitsFleetOnRedis runs three gateways of each design on a real
// redis-server under a per-second and a per-10-seconds limit, flooded: each
// limit's log on Redis holds exactly the requests admitted (a request one
// limit refused spends none of the other), and the exact designs pass
// neither limit.
func TestSeveralLimitsFleetOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	lims := []Limit{{Requests: 10, Window: time.Second}, {Requests: 40, Window: 10 * time.Second}}
	for _, name := range []string{"central-log", "lease-ask", "shared-counter", "headroom", "split"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := redisstore.New(ctx, redisstore.Options{Addrs: []string{srv.Addr}, Prefix: "multi:" + name + ":"})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var ls []*Limiter
			for g := range 3 {
				ls = append(ls, mustNew(t, Config{Design: name, Store: st, Gateways: 3, Gateway: g, Sync: 100 * time.Millisecond,
					Logger: quietLog, Timeout: 200 * time.Millisecond, Fleet: name}))
			}
			var mu sync.Mutex
			var admits []int64
			var wg sync.WaitGroup
			for _, l := range ls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 300 { // 100 a second at each gateway for 3 s
						time.Sleep(10 * time.Millisecond)
						d, err := l.AllowLimits(ctx, "acct", lims, 1)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed && !d.Degraded {
							mu.Lock()
							admits = append(admits, d.At.UnixNano())
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			for _, l := range ls {
				if err := l.SyncNow(ctx); err != nil {
					t.Fatal(err)
				}
				if s := l.Stats(); s.Fallbacks > 0 {
					t.Skipf("the store was slow (%d fallbacks): the counts below would mix in fallback admits", s.Fallbacks)
				}
			}
			end := ls[0].Now().UnixNano() // after every gateway's last sync
			for i, lim := range lims {
				k := store.Key{Name: "acct", Limit: lim.Requests, Window: window.Spec{Size: lim.Window}, Part: i + 1}
				stamps, err := redisinspect.Of(st).StampsOf(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				// the window at the end, from a whole µs (Redis keeps µs)
				lo := (end-int64(lim.Window))/1000*1000 + 1000
				if got, want := countFrom(stamps, lo), countFrom(admits, lo); got != want {
					t.Errorf("limit %d/%v: Redis logs %d admits in the last window, the gateways admitted %d", lim.Requests, lim.Window, got, want)
				}
				// Decisions carry the gateway's time, read before the store call,
				// which reaches the store up to the timeout later (and clocks
				// tick apart by a millisecond): over windows shortened by that
				// much the exact designs' guarantee holds on the gateways'
				// times (as TestFleetOnRedis measures it).
				flight := 200*time.Millisecond + time.Millisecond
				if w := worst(slices.Clone(admits), lim.Window-flight); (name == "central-log" || name == "lease-ask") && w > lim.Requests {
					t.Errorf("limit %d/%v: %d admitted in one window of W-%v by an exact design", lim.Requests, lim.Window, w, flight)
				}
			}
			if len(admits) < 20 {
				t.Errorf("only %d admitted in 3 s under 40 per 10 s", len(admits))
			}
		})
	}
}
