package limiter

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/internal/redisinspect"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// drive sends requests for key from workers goroutines, one after another,
// until d has passed, and returns every decision with its latency.
func drive(l *Limiter, key string, workers int, d time.Duration) ([]Decision, []time.Duration) {
	var mu sync.Mutex
	var ds []Decision
	var lat []time.Duration
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1_000_000 && time.Now().Before(end); i++ {
				t0 := time.Now()
				dec := mustAllow(l.Allow(context.Background(), key))
				took := time.Since(t0)
				mu.Lock()
				ds, lat = append(ds, dec), append(lat, took)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return ds, lat
}

// latencyChecked reports whether this run holds decisions to their time
// limits (FLEETLIMIT_QUIET_MACHINE set). On a busy machine the scheduler
// alone can hold a goroutine for longer than any store timeout, so by
// default a test logs latencies and holds only the bounds that no
// scheduling can break; docs/performance.md has the figures of a quiet one.
func latencyChecked() bool { return os.Getenv("FLEETLIMIT_QUIET_MACHINE") != "" }

// A paused Redis (SIGSTOP) answers nothing and refuses nothing. The limiter
// must report degraded, and afterwards the store must hold exactly the
// admits clients were told of: a call Redis had begun when it was frozen,
// which completes after its client gave up, is withdrawn at the next
// contact. With FLEETLIMIT_QUIET_MACHINE set, every decision must also be
// made within the store timeout, plus a margin.
func TestPausedStore(t *testing.T) {
	const timeout = 50 * time.Millisecond
	const margin = 150 * time.Millisecond
	for _, name := range []string{"central-log", "lease-ask", "shared-counter", "headroom"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			l, err := New(Config{Design: name, Limit: 1_000_000, Window: time.Minute, Sync: 100 * time.Millisecond,
				Timeout: timeout, SyncTimeout: 200 * time.Millisecond, Store: st, Logger: quietLog})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(400 * time.Millisecond)
				srv.Pause()
				time.Sleep(1500 * time.Millisecond)
				srv.Resume()
			}()
			var degraded atomic.Bool
			stop := make(chan struct{})
			go func() { // watch for the degraded state while paused
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
						if l.Stats().Degraded {
							degraded.Store(true)
						}
					}
				}
			}()
			ds, lat := drive(l, "k", 8, 3*time.Second)
			close(stop)
			admitted := 0
			var slowest time.Duration
			for i, d := range ds {
				if d.Allowed {
					admitted++
				}
				slowest = max(slowest, lat[i])
			}
			if slowest > timeout+margin && latencyChecked() {
				t.Errorf("slowest decision took %v with a %v store timeout", slowest, timeout)
			}
			if !degraded.Load() {
				t.Error("the limiter never reported degraded while the store was paused")
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			stamps, err := redisinspect.Of(st).Stamps(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if len(stamps) != admitted {
				t.Errorf("the store holds %d admits; clients were told of %d (of %d decisions, %d calls abandoned)", len(stamps), admitted, len(ds), l.Stats().Abandoned)
			}
			t.Logf("%d decisions, %d admitted, slowest %v, %d calls abandoned", len(ds), admitted, slowest, l.Stats().Abandoned)
		})
	}
}

// A gateway restarted mid-window, and keys evicted under MaxKeys and
// re-created, push their new admits with a new epoch: the store's count
// equals what clients were told at every step (a new life's admits used to
// overwrite, on Redis, or be skipped, on memstore, as the old life's).
func TestRestartAndEvictionKeepEveryAdmit(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	st, err := redisstore.New(ctx, redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gateway := func(i, maxKeys int) *Limiter {
		l, err := New(Config{Design: "shared-counter", Limit: 1_000_000, Window: time.Minute, Sync: time.Hour,
			Gateways: 3, Gateway: i, Store: st, MaxKeys: maxKeys, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	told := 0
	admit := func(l *Limiter, key string, n int) {
		for i := 0; i < n; i++ {
			if mustAllow(l.Allow(ctx, key)).Allowed {
				told++
			}
		}
	}
	check := func(step string, key string) {
		t.Helper()
		stamps, err := redisinspect.Of(st).Stamps(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(stamps) != told {
			t.Fatalf("%s: the store holds %d admits of %q, clients were told of %d", step, len(stamps), key, told)
		}
	}
	ls := []*Limiter{gateway(0, 0), gateway(1, 0), gateway(2, 0)}
	for _, l := range ls {
		admit(l, "k", 200)
		l.SyncNow(ctx)
	}
	check("before the restart", "k")
	if err := ls[1].Close(); err != nil {
		t.Fatal(err)
	}
	ls[1] = gateway(1, 0) // the restarted process numbers its admits afresh
	for _, l := range ls {
		admit(l, "k", 200)
		l.SyncNow(ctx)
	}
	check("after gateway 1 restarted", "k")
	for _, l := range ls {
		l.Close()
	}

	// Evictions: two keys alternate at a gateway that holds one key, so
	// every request re-creates its key and evicts the other.
	told = 0
	l := gateway(0, 1)
	defer l.Close()
	for i := 0; i < 20; i++ {
		admit(l, "a", 1)
		mustAllow(l.Allow(ctx, "b"))
	}
	l.SyncNow(ctx)
	check("after 20 evictions of key a", "a")
}

// One request of a huge cost under a huge limit is one entry everywhere:
// the limiter's memory does not follow the cost (one such request used to
// add 84 bytes a hit, and 2^31-1 hits ended the process).
func TestHugeCostIsOneEntry(t *testing.T) {
	for _, name := range []string{"central-log", "split", "shared-counter", "extrapolate", "track-share", "lease", "lease-ask"} {
		l := mustNew(t, Config{Design: name, Limit: 100, Window: time.Minute, Logger: quietLog})
		ctx := context.Background()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		lim := Limit{Requests: 1<<32 - 1, Window: 365 * 24 * time.Hour}
		for i := 0; i < 2; i++ {
			if _, err := l.AllowLimit(ctx, "k", lim, 1<<31-1); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.SyncNow(ctx); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
			t.Errorf("%s: two requests of cost 2^31-1 grew the heap by %d bytes", name, grew)
		}
	}
}

// lines counts the log lines that contain a text.
type lines struct {
	mu   sync.Mutex
	text string
	n    int
}

func (c *lines) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.Contains(string(p), c.text) {
		c.n++
	}
	return len(p), nil
}

func (c *lines) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// A Redis that loses its data mid-window (FLUSHALL, or a restart without
// persistence) under a flood at three gateways of every design: each
// gateway tells at its first contact since (a sync at most, Δ) that Redis
// forgot the key, says so in one log line and Stats.Forgotten, pushes its
// own admits of the window again at once, and keeps the count it
// remembered until Redis's count has come back. No window holds more than
// L plus one sync interval's arrivals, where it used to hold up to 2 L;
// the exact designs hold L + K; a store call that timed out meanwhile (a
// restart, a busy machine) adds what the fallback may add.
func TestStoreThatLostItsData(t *testing.T) {
	for _, how := range []string{"flushall", "restart"} {
		t.Run(how, func(t *testing.T) {
			srv := redistest.Start(t) // no persistence
			names := design.Sliding()
			type result struct {
				worst, admitted, forgotten int
				logged                     []int
				fellBack                   int // what the fallback may add to the bound
				err                        error
			}
			results := make([]result, len(names))
			lost := make(chan struct{})
			// headroom's bound is L plus its local budgets, B_j: a watch
			// records them
			budgets := &budgetWatch{cur: make([]int, 3), most: make([]int, 3)}
			watchedHeadroom := fmt.Sprintf("headroom-lost-%d", watchRuns.Add(1))
			if err := registerTest(design.Info{Name: watchedHeadroom, FineBuckets: true, New: func(c design.Config) design.Gateway {
				return watched{design.NewHeadroom(c, design.HeadroomTolerance), budgets, c.Gateway}
			}}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i, name := range names {
				dsg := name
				if name == "headroom" {
					dsg = watchedHeadroom
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := &results[i]
					r.worst, r.admitted, r.forgotten, r.logged, r.fellBack, r.err = forgetFleet(srv, name, dsg, lost)
				}()
			}
			time.Sleep(3 * time.Second)
			srv.Forget(how)
			close(lost)
			wg.Wait()
			const limit, k, perSync = 200, 3, 20 // a flood of 100 a second, Δ = 200 ms
			exact := []string{"central-log", "lease", "lease-ask", "headroom"}
			for i, name := range names {
				r := results[i]
				if r.err != nil {
					t.Errorf("%s: %v", name, r.err)
					continue
				}
				bound := limit + perSync + k
				if slices.Contains(exact, name) {
					bound = limit + k
				}
				if name == "headroom" {
					bound += budgets.sum()
				}
				bound += r.fellBack
				// the counter designs overshoot a flood by their nature, with a
				// loss or not: TestForgottenKeyIsReseeded (design) holds them
				// to it
				if r.worst > bound && !slices.Contains([]string{"shared-counter", "extrapolate", "track-share"}, name) {
					t.Errorf("%s: worst window %d, over %d", name, r.worst, bound)
				}
				t.Logf("%s: %d admitted, worst window %d of L = %d; %d gateways found the loss, log lines %v", name, r.admitted, r.worst, limit, r.forgotten, r.logged)
				if name == "split" { // its rule never reads the store; its next push finds the loss
					continue
				}
				if r.forgotten != k {
					t.Errorf("%s: %d of %d gateways found that Redis forgot the key within a sync", name, r.forgotten, k)
				}
				for g, n := range r.logged {
					if n != 1 {
						t.Errorf("%s: gateway %d logged the loss %d times, want once", name, g, n)
					}
				}
			}
		})
	}
}

// forgetFleet floods three gateways of a design (registered as dsg) on srv (L = 200 per 10 s,
// Δ = 200 ms, 100 requests a second) for 6 s while the store loses its
// data when lost closes, and returns the worst window, the admits, how many
// gateways counted the loss within a sync of it, and each gateway's log
// lines about it.
func forgetFleet(srv *redistest.Server, name, dsg string, lost <-chan struct{}) (w, admitted, forgotten int, logged []int, fellBack int, err error) {
	const k = 3
	var ls []*Limiter
	var logs []*lines
	for i := range k {
		st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}, Prefix: "lost:" + name + ":"})
		if err != nil {
			return 0, 0, 0, nil, 0, err
		}
		defer st.Close()
		lg := &lines{text: "the store lost keys' windows"}
		l, err := New(Config{Design: dsg, Limit: 200, Window: 10 * time.Second, Sync: 200 * time.Millisecond, Gateways: k, Gateway: i,
			Store: st, Fleet: "lost:" + name, Logger: slog.New(slog.NewTextHandler(lg, nil))})
		if err != nil {
			return 0, 0, 0, nil, 0, err
		}
		defer l.Close()
		ls, logs = append(ls, l), append(logs, lg)
	}
	found := make(chan int, 1)
	go func() { // count the gateways that found the loss within a sync
		<-lost
		time.Sleep(200*time.Millisecond + ls[0].Config().SyncTimeout)
		n := 0
		for _, l := range ls {
			if l.Stats().Forgotten > 0 {
				n++
			}
		}
		found <- n
	}()
	r := flood(ls, "k", 100, 6*time.Second, false)
	ts := r.stamps()
	for _, lg := range logs {
		logged = append(logged, lg.count())
	}
	// what the fallback may add: the rounding, K − 1, and what its views
	// had not heard of (docs/design.md)
	if r.fallbackAdmits > 0 {
		fellBack = k - 1 + r.mostUnheard(ts, ls[0].Config().Sync+r.longestSync)
	}
	return worst(ts, 10*time.Second), len(ts), <-found, logged, fellBack, nil
}
