package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/internal/redisinspect"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
	"github.com/fleetlimit/fleetlimit/store/storetest"
	"github.com/fleetlimit/fleetlimit/window"
)

// benchWindows are the window kinds the benchmarks compare: the exact log
// and a minute in 60 counters.
var benchWindows = []window.Spec{{Size: time.Minute}, {Size: time.Minute, Buckets: 60}}

// BenchmarkSyncChangedKeys: syncs of N changed keys from one gateway (one
// new admit each, a horizon of two syncs, as shared-counter pushes them)
// against a real redis-server on loopback, Δ = 1 s. It reports the wall
// time of one sync and the CPU Redis spent per key in the sync script
// (INFO commandstats), which is what bounds the keys one Redis serves.
func BenchmarkSyncChangedKeys(b *testing.B) {
	srv := redistest.Start(b)
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for _, n := range []int{10000, 100000} {
		for _, sp := range benchWindows {
			b.Run(fmt.Sprintf("keys=%d/window=%v", n, sp), func(b *testing.B) { syncChanged(b, st, sp, n) })
		}
	}
}

func syncChanged(b *testing.B, st *redisstore.Store, sp window.Spec, n int) {
	ctx := context.Background()
	items := make([]store.SyncItem, n)
	for i := range items {
		items[i].Key = store.Key{Name: fmt.Sprintf("bench/%v/%d", sp, i), Limit: 100, Window: sp}
	}
	const batch = 1000 // the limiter's SyncBatch
	now, seq := storetest.T0, uint64(1)
	syncAll := func() {
		now += int64(time.Second)
		for i := range items {
			items[i].Push = store.Push{Admits: []int64{now - int64(time.Millisecond)}, Seq: seq, Epoch: 1, Horizon: 2 * int64(time.Second)}
		}
		seq++
		for i := 0; i < len(items); i += batch {
			if err := st.Sync(ctx, now, items[i:min(i+batch, len(items))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	for range 3 { // the keys exist, with admits in several buckets
		syncAll()
	}
	before := scriptCPU(b, redisinspect.Of(st).Client())
	syncs := 0
	for b.Loop() {
		syncAll()
		syncs++
	}
	cpu := scriptCPU(b, redisinspect.Of(st).Client()) - before
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(syncs), "ms/sync")
	b.ReportMetric(cpu/float64(syncs*n), "redis-µs/key")
}

// BenchmarkSyncFloor: what any script that reads and writes each key costs
// Redis, for comparison with BenchmarkSyncChangedKeys: 100 keys a call, one
// packed argument a key as the counters' sync has, and per key nothing
// ("args"), one GET of a 300-byte record ("get"), or that and one SETRANGE
// ("get+setrange").
func BenchmarkSyncFloor(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client()
	defer rdb.Close()
	ctx := context.Background()
	const n, batch = 10000, 100
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("floor:{%d}:c", i)
		if err := rdb.Set(ctx, keys[i], strings.Repeat("x", 300), 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	arg := strings.Repeat("a", 56)
	for _, v := range []struct{ name, body string }{
		{"args", ""},
		{"get", "local s = redis.call('GET', KEYS[k])"},
		{"get+setrange", "local s = redis.call('GET', KEYS[k]) redis.call('SETRANGE', KEYS[k], 40, string.sub(ARGV[k], 1, 48))"},
	} {
		sc := redis.NewScript("local r = {} for k = 1, #KEYS do local a = ARGV[k] " + v.body + " r[k] = 1 end return r")
		b.Run(v.name, func(b *testing.B) {
			args := make([]any, batch)
			for i := range args {
				args[i] = arg
			}
			before := scriptCPU(b, rdb)
			calls := 0
			for b.Loop() {
				for i := 0; i < n; i += batch {
					if err := sc.Run(ctx, rdb, keys[i:i+batch], args...).Err(); err != nil {
						b.Fatal(err)
					}
					calls++
				}
			}
			b.ReportMetric((scriptCPU(b, rdb)-before)/float64(calls*batch), "redis-µs/key")
		})
	}
}

// scriptCPU is the CPU, µs, Redis has spent in scripts (EVALSHA and EVAL)
// since its statistics were last reset.
func scriptCPU(b *testing.B, rdb redis.UniversalClient) float64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		for _, f := range strings.Split(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				u, _ := strconv.ParseFloat(v, 64)
				total += u
			}
		}
	}
	return total
}

// BenchmarkMemoryPerKey: the Redis memory (MEMORY USAGE of every Redis key
// it has) of a key whose window is full, for each window kind: a limit of
// 100 and of 10,000 requests of cost 1, and of 1,000,000 of cost 1,000,
// pushed by 4 gateways over the last minute.
func BenchmarkMemoryPerKey(b *testing.B) {
	srv := redistest.Start(b)
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct{ limit, cost int }{{100, 1}, {10000, 1}, {1000000, 1000}} {
		for _, sp := range benchWindows {
			b.Run(fmt.Sprintf("limit=%d/cost=%d/window=%v", c.limit, c.cost, sp), func(b *testing.B) {
				const keys = 20
				var bytes int64
				for b.Loop() {
					bytes = fullKeys(b, st, sp, c.limit, c.cost, keys)
				}
				b.ReportMetric(float64(bytes)/keys, "redis-B/key")
			})
		}
	}
}

// fullKeys fills n keys to their limit and returns the Redis memory they use.
func fullKeys(b *testing.B, st *redisstore.Store, sp window.Spec, limit, cost, n int) int64 {
	ctx := context.Background()
	const gateways = 4
	now := storetest.T0 + int64(time.Hour)
	admits := limit / cost
	var total int64
	for k := range n {
		key := store.Key{Name: fmt.Sprintf("mem/%v/%d/%d/%d", sp, limit, cost, k), Limit: limit, Window: sp}
		for g := range gateways {
			var stamps []int64
			var counts []int
			for i := g; i < admits; i += gateways {
				stamps = append(stamps, now-int64(sp.Size)+int64(i+1)*int64(sp.Size)/int64(admits))
				counts = append(counts, cost)
			}
			if cost == 1 {
				counts = nil
			}
			items := []store.SyncItem{{Key: key, Push: store.Push{Gateway: g, Admits: stamps, Counts: counts, Seq: 1, Epoch: 1}}}
			if err := st.Sync(ctx, now, items); err != nil {
				b.Fatal(err)
			}
			if got := items[0].Pull.Count; g == gateways-1 && got != limit {
				b.Fatalf("%s counts %d, want %d", key.Name, got, limit)
			}
		}
		rkeys, err := redisinspect.Of(st).Client().Keys(ctx, "fl:{"+key.Name+"}*").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, rk := range rkeys {
			u, err := redisinspect.Of(st).Client().MemoryUsage(ctx, rk, 0).Result()
			if err != nil {
				b.Fatal(err)
			}
			total += u
		}
		redisinspect.Of(st).Client().Del(ctx, rkeys...)
	}
	return total
}
