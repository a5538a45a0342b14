package limiter

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// BenchmarkAllow: one warm key on the embedded store, syncing every 100ms
// in the background as in production; round-trips/op is the share of
// decisions that asked the store (design.BenchmarkDecide measures the
// designs' own decisions, in steady traffic). "over" is a key past its limit (100
// a minute), where a hot key spends a flood; "admit" a key whose limit is
// never reached, so that every request is admitted and becomes a stamp the
// store keeps (the background sync's cost shares the 2 cores).
func BenchmarkAllow(b *testing.B) {
	for _, name := range slices.Concat(design.StudyDesigns, design.OwnDesigns) {
		b.Run(name+"/over", func(b *testing.B) {
			l, err := New(Config{Design: name, Limit: 100, Window: time.Minute, Sync: 100 * time.Millisecond, Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			for i := 0; i < 200; i++ {
				l.Allow(ctx, "warm")
			}
			l.SyncNow(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			trips := l.Stats().RoundTrips
			for b.Loop() {
				l.Allow(ctx, "warm")
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
			l.Allow(ctx, "warm")
			l.SyncNow(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			trips := l.Stats().RoundTrips
			for b.Loop() {
				l.Allow(ctx, "warm")
			}
			b.ReportMetric(float64(l.Stats().RoundTrips-trips)/float64(b.N), "round-trips/op")
		})
	}
}

// BenchmarkAllowParallel: the "over" case under b.RunParallel, the
// goroutines spread over 64 warm keys past their limit.
func BenchmarkAllowParallel(b *testing.B) {
	for _, name := range slices.Concat(design.StudyDesigns, design.OwnDesigns) {
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
					l.Allow(ctx, keys[i])
				}
			}
			l.SyncNow(ctx)
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := keys[int(next.Add(1))%len(keys)]
				for pb.Next() {
					l.Allow(ctx, key)
				}
			})
		})
	}
}

// BenchmarkSyncRedis10k: one sync of 10,000 changed keys (each with one new
// admit) against a real redis-server on loopback, shared-counter.
func BenchmarkSyncRedis10k(b *testing.B) {
	srv := redistest.Start(b)
	st, err := redisstore.Dial(context.Background(), srv.Addr, redisstore.Options{})
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
			l.Allow(ctx, k)
		}
		b.StartTimer()
		if err := l.SyncNow(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/sync")
}
