package limiter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
				dec := l.Allow(context.Background(), key)
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

// A paused Redis (SIGSTOP) answers nothing and refuses nothing. Every
// decision must still be made within the store timeout (plus a margin for
// this shared machine), the limiter must report degraded, and afterwards
// the store must hold exactly the admits clients were told of: none that a
// client was told was rejected, none lost.
func TestPausedStore(t *testing.T) {
	const timeout = 50 * time.Millisecond
	const margin = 150 * time.Millisecond
	for _, name := range []string{"central-log", "lease-ask", "shared-counter"} {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			st, err := redisstore.Dial(context.Background(), srv.Addr, redisstore.Options{})
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
			if slowest > timeout+margin {
				t.Errorf("slowest decision took %v with a %v store timeout", slowest, timeout)
			}
			if !degraded.Load() {
				t.Error("the limiter never reported degraded while the store was paused")
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			stamps, err := st.Stamps(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if len(stamps) != admitted {
				t.Errorf("the store holds %d admits; clients were told of %d (of %d decisions)", len(stamps), admitted, len(ds))
			}
			t.Logf("%d decisions, %d admitted, slowest %v", len(ds), admitted, slowest)
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
	st, err := redisstore.Dial(ctx, srv.Addr, redisstore.Options{})
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
			if l.Allow(ctx, key).Allowed {
				told++
			}
		}
	}
	check := func(step string, key string) {
		t.Helper()
		stamps, err := st.Stamps(ctx, key)
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
		l.Allow(ctx, "b")
	}
	l.SyncNow(ctx)
	check("after 20 evictions of key a", "a")
}
