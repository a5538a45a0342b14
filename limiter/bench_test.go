package limiter

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// BenchmarkAllow: one warm key on the embedded store, syncing every 100ms
// in the background as in production; round-trips/op is the share of
// decisions that asked the store (design.BenchmarkDecide measures the
// designs' own decisions, in steady traffic). "over" is a key past its limit (100
// a minute), where a hot key spends a flood; "admit" a key whose limit is
// never reached, so that every request is admitted and becomes a stamp the
// store keeps (the background sync's cost shares the 2 cores).
func BenchmarkAllow(b *testing.B) {
	for _, name := range design.Sliding() {
		b.Run(name+"/over", func(b *testing.B) {
			l, err := New(Config{Design: name, Limit: 100, Window: time.Minute, Sync: 100 * time.Millisecond, Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			for i := 0; i < 200; i++ {
				mustAllow(l.Allow(ctx, "warm"))
			}
			l.SyncNow(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			trips := l.Stats().RoundTrips
			for b.Loop() {
				mustAllow(l.Allow(ctx, "warm"))
			}
			b.ReportMetric(float64(l.Stats().RoundTrips-trips)/float64(b.N), "round-trips/op")
		})
		b.Run(name+"/admit", func(b *testing.B) {
			l, err := New(Config{Design: name, Limit: 1 << 30, Window: time.Second, Sync: 100 * time.Millisecond, Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			mustAllow(l.Allow(ctx, "warm"))
			l.SyncNow(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			trips := l.Stats().RoundTrips
			for b.Loop() {
				mustAllow(l.Allow(ctx, "warm"))
			}
			b.ReportMetric(float64(l.Stats().RoundTrips-trips)/float64(b.N), "round-trips/op")
		})
	}
}

// BenchmarkAllowParallel: the "over" case under b.RunParallel, the
// goroutines spread over 64 warm keys past their limit.
func BenchmarkAllowParallel(b *testing.B) {
	for _, name := range design.Sliding() {
		b.Run(name, func(b *testing.B) {
			l, err := New(Config{Design: name, Limit: 100, Window: time.Minute, Sync: 100 * time.Millisecond, Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			keys := make([]string, 64)
			for i := range keys {
				keys[i] = "warm-" + strconv.Itoa(i)
				for j := 0; j < 200; j++ {
					mustAllow(l.Allow(ctx, keys[i]))
				}
			}
			l.SyncNow(ctx)
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := keys[int(next.Add(1))%len(keys)]
				for pb.Next() {
					mustAllow(l.Allow(ctx, key))
				}
			})
		})
	}
}

// BenchmarkSyncRedis10k: one sync of 10,000 changed keys (each with one new
// admit) against a real redis-server on loopback, shared-counter.
func BenchmarkSyncRedis10k(b *testing.B) {
	srv := redistest.Start(b)
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	l, err := New(Config{Limit: 1000, Window: time.Minute, Sync: time.Hour, Store: st, SyncTimeout: 10 * time.Second, Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	for b.Loop() {
		b.StopTimer()
		for _, k := range keys {
			mustAllow(l.Allow(ctx, k))
		}
		b.StartTimer()
		if err := l.SyncNow(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/sync")
}

// BenchmarkKeyMemory: the heap a held key costs, its window full (L
// requests spread over the last W, synced every Δ of a manual clock, on
// the embedded store, which the heap includes), for the exact log and a
// window of 60 counters; B/key is the heap after less the heap before,
// over the keys.
func BenchmarkKeyMemory(b *testing.B) {
	for _, name := range []string{"shared-counter", "central-log", "headroom"} {
		for _, limit := range []int{100, 10000} {
			for _, buckets := range []int{0, 60} {
				b.Run(fmt.Sprintf("%s/limit=%d/buckets=%d", name, limit, buckets), func(b *testing.B) {
					keys := 1_000_000 / limit
					var per float64
					for b.Loop() {
						per = keyMemory(b, name, limit, buckets, keys)
					}
					b.ReportMetric(per, "B/key")
				})
			}
		}
	}
}

func keyMemory(b *testing.B, name string, limit, buckets, keys int) float64 {
	const win, delta = time.Minute, time.Second
	var now atomic.Int64
	now.Store(1_790_000_000_000_000_000)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	l, err := New(Config{Design: name, Limit: limit, Window: win, WindowBuckets: buckets, Sync: time.Hour, MaxKeys: keys,
		Now: func() time.Time { return time.Unix(0, now.Load()) }, Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	names := make([]string, keys)
	for k := range names {
		names[k] = "k" + strconv.Itoa(k)
	}
	step := int64(win) / int64(limit)
	next := now.Load() + int64(delta)
	for i := range limit {
		for _, k := range names {
			if d := mustAllow(l.Allow(ctx, k)); !d.Allowed {
				b.Fatalf("%s: request %d of key %s rejected under its limit", name, i, k)
			}
		}
		if now.Add(step) >= next {
			if err := l.SyncNow(ctx); err != nil {
				b.Fatal(err)
			}
			next += int64(delta)
		}
	}
	if err := l.SyncNow(ctx); err != nil {
		b.Fatal(err)
	}
	after := heap()
	per := (float64(after) - float64(before)) / float64(keys)
	runtime.KeepAlive(l)
	l.Close()
	return per
}

// BenchmarkAllowRedis: a decision that waits on a real redis-server on
// loopback (central-log, a key far from its limit), beside the bare store
// call it makes ("call"): what the limiter adds to a round trip; and
// "patient", the same decision while the store has lately been slow, when
// the call runs on a goroutine that may outlive the request.
func BenchmarkAllowRedis(b *testing.B) {
	srv := redistest.Start(b)
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	l, err := New(Config{Design: "central-log", Limit: 1 << 30, Window: time.Minute, Sync: time.Hour, Store: st, Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	b.Run("allow", func(b *testing.B) {
		for b.Loop() {
			if !mustAllow(l.Allow(ctx, "k")).Allowed {
				b.Fatal("rejected under its limit")
			}
		}
	})
	b.Run("patient", func(b *testing.B) {
		for b.Loop() {
			l.slowUntil.Store(time.Now().Add(time.Hour).UnixNano())
			if !mustAllow(l.Allow(ctx, "k")).Allowed {
				b.Fatal("rejected under its limit")
			}
		}
		l.slowUntil.Store(0)
	})
	b.Run("call", func(b *testing.B) {
		key := store.Key{Name: "c", Limit: 1 << 30, Window: window.Spec{Size: time.Minute}}
		for b.Loop() {
			cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			_, err := st.Ask(cctx, l.Now().UnixNano(), key, 0, store.Query{Kind: store.QueryCentral, N: 1})
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAllowLimits: one warm key over its limit on the embedded store,
// as BenchmarkAllow's "over", under one limit (AllowLimit) and under two
// (AllowLimits: 100 a minute and 1,000 a second, the minute binding), side
// by side: the price of a second limit.
func BenchmarkAllowLimits(b *testing.B) {
	minute := Limit{Requests: 100, Window: time.Minute}
	two := []Limit{minute, {Requests: 1000, Window: time.Second}}
	for _, name := range []string{"shared-counter", "headroom", "central-log"} {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/limits=%d", name, n), func(b *testing.B) {
				l, err := New(Config{Design: name, Sync: 100 * time.Millisecond, Logger: quietLog})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				ctx := context.Background()
				for range 200 {
					l.AllowLimits(ctx, "warm", two[:n], 1)
				}
				l.SyncNow(ctx)
				b.ReportAllocs()
				for b.Loop() {
					l.AllowLimits(ctx, "warm", two[:n], 1)
				}
			})
		}
	}
}
