package limiter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
)

// clock is a manual clock.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newClock() *clock               { c := &clock{}; c.ns.Store(1_790_000_000_000_000_000); return c }
func quiet(t *testing.T, l *Limiter) { t.Cleanup(func() { l.Close() }) }
func mustNew(t *testing.T, c Config) *Limiter {
	t.Helper()
	if c.Sync == 0 {
		c.Sync = time.Hour // tests sync by hand with SyncNow
	}
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	quiet(t, l)
	return l
}

func TestEveryDesignHoldsTheLimitAlone(t *testing.T) {
	for _, name := range design.Sliding() {
		t.Run(name, func(t *testing.T) {
			ck := newClock()
			l := mustNew(t, Config{Design: name, Limit: 5, Window: time.Minute, Now: ck.now})
			ctx := context.Background()
			admitted := 0
			if name == "lease" || name == "lease-ask" {
				if d, _ := l.AllowN(ctx, "k", 1); d.Allowed { // lets the lease see an arrival
					admitted++
				}
				ck.add(time.Millisecond)
				if err := l.SyncNow(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 20; i++ {
				ck.add(time.Millisecond)
				if d := mustAllow(l.Allow(ctx, "k")); d.Allowed {
					admitted++
					if d.Limit != 5 || d.Remaining < 0 || d.Remaining > 4 {
						t.Fatalf("decision %+v", d)
					}
				} else if d.RetryAfter <= 0 {
					t.Fatalf("rejected without a Retry-After: %+v", d)
				}
				if name == "lease" && i%3 == 2 {
					l.SyncNow(ctx)
				}
			}
			if admitted == 0 || admitted > 5 {
				t.Fatalf("admitted %d of 20 with L = 5", admitted)
			}
			if name != "lease" && admitted != 5 {
				t.Fatalf("admitted %d, want exactly L = 5 for one gateway", admitted)
			}
		})
	}
}

func TestSharedCounterHeaders(t *testing.T) {
	ck := newClock()
	l := mustNew(t, Config{Design: "shared-counter", Limit: 3, Window: 10 * time.Second, Now: ck.now})
	ctx := context.Background()
	d := mustAllow(l.Allow(ctx, "k"))
	if !d.Allowed || d.Remaining != 2 || d.Reset != 10*time.Second {
		t.Fatalf("first: %+v, want allowed, 2 left, reset in 10s", d)
	}
	ck.add(4 * time.Second)
	mustAllow(l.Allow(ctx, "k"))
	mustAllow(l.Allow(ctx, "k"))
	d = mustAllow(l.Allow(ctx, "k"))
	if d.Allowed || d.Remaining != 0 || d.RetryAfter != 6*time.Second {
		t.Fatalf("fourth: %+v, want rejected, retry in 6s (when the first admit leaves)", d)
	}
	ck.add(6 * time.Second)
	if d = mustAllow(l.Allow(ctx, "k")); !d.Allowed {
		t.Fatalf("after the first admit left: %+v", d)
	}
}

func TestPerKeyLimit(t *testing.T) {
	ck := newClock()
	l := mustNew(t, Config{Limit: 100, Now: ck.now})
	ctx := context.Background()
	n := 0
	for i := 0; i < 10; i++ {
		if d, _ := l.AllowLimit(ctx, "tight", Limit{Requests: 2, Window: time.Minute}, 1); d.Allowed {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("admitted %d under a per-key limit of 2", n)
	}
}

func TestConcurrentUseStaysExact(t *testing.T) {
	for _, name := range []string{"central-log", "shared-counter", "split"} {
		l := mustNew(t, Config{Design: name, Limit: 50, Window: time.Minute})
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					if mustAllow(l.Allow(context.Background(), "shared")).Allowed {
						admitted.Add(1)
					}
					mustAllow(l.Allow(context.Background(), "own-key-"+string(rune('a'+i%8))))
				}
			}()
		}
		wg.Wait()
		if n := admitted.Load(); n != 50 {
			t.Fatalf("%s: %d admitted by one gateway with L = 50", name, n)
		}
	}
}

func TestKeysAreBoundedAndEvicted(t *testing.T) {
	ck := newClock()
	st := memstore.New()
	l := mustNew(t, Config{Limit: 10, MaxKeys: 100, IdleAfter: time.Minute, Now: ck.now, Store: st})
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		mustAllow(l.Allow(ctx, "k"+itoa(i)))
	}
	if n := l.Stats().Keys; n > 100 {
		t.Fatalf("%d keys held with MaxKeys 100", n)
	}
	// Evicted keys' admits still reach the store.
	if err := l.SyncNow(ctx); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i := 0; i < 1000; i++ {
		total += len(st.Stamps("k"+itoa(i), ck.now().UnixNano()))
	}
	if total != 1000 {
		t.Fatalf("the store holds %d admits of 1000", total)
	}
	ck.add(2 * time.Minute)
	l.SyncNow(ctx)
	if n := l.Stats().Keys; n != 0 {
		t.Fatalf("%d keys held after idling past IdleAfter", n)
	}
}

func TestCloseFlushes(t *testing.T) {
	st := memstore.New()
	l, err := New(Config{Limit: 10, Sync: time.Hour, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAllow(l.Allow(context.Background(), "k"))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(st.Stamps("k", time.Now().UnixNano())); n != 3 {
		t.Fatalf("store holds %d admits after Close, want 3", n)
	}
}

// flaky is a backend that can be cut off: calls then block until their
// context ends, as a dead network does.
type flaky struct {
	store.Backend
	down atomic.Bool
}

var errDown = errors.New("store down")

func (f *flaky) wait(ctx context.Context) error {
	<-ctx.Done()
	return errDown
}

func (f *flaky) Sync(ctx context.Context, now int64, items []store.SyncItem) error {
	if f.down.Load() {
		return f.wait(ctx)
	}
	return f.Backend.Sync(ctx, now, items)
}

func (f *flaky) Ask(ctx context.Context, now int64, k store.Key, gw int, q store.Query) (store.Answer, error) {
	if f.down.Load() {
		return store.Answer{}, f.wait(ctx)
	}
	return f.Backend.Ask(ctx, now, k, gw, q)
}

func TestFallbackWhileStoreIsDown(t *testing.T) {
	for _, failClosed := range []bool{false, true} {
		ck := newClock()
		mem := memstore.New()
		fl := &flaky{Backend: mem}
		l := mustNew(t, Config{Design: "central-log", Limit: 40, Gateways: 4, Timeout: 20 * time.Millisecond, Now: ck.now, Store: fl, FailClosed: failClosed})
		ctx := context.Background()
		for i := 0; i < 5; i++ {
			mustAllow(l.Allow(ctx, "k"))
		}
		fl.down.Store(true)
		admitted := 0
		for i := 0; i < 30; i++ {
			ck.add(time.Millisecond)
			d := mustAllow(l.Allow(ctx, "k"))
			if !d.Degraded {
				t.Fatalf("decision %d not marked degraded", i)
			}
			if d.Allowed {
				admitted++
			}
		}
		// The store last said 5 of 40: the fallback shares the room it
		// left among the K = 4 gateways, ceil(35/4) = 9 (the first three
		// requests timed out, were withdrawn and fell back too).
		if want := map[bool]int{false: 9, true: 0}[failClosed]; admitted != want {
			t.Fatalf("failClosed=%v: admitted %d while down, want %d", failClosed, admitted, want)
		}
		if st := l.Stats(); !st.Degraded || st.StoreErrors != 3 || st.Abandoned != 3 {
			t.Fatalf("stats %+v: want degraded after FailAfter = 3 calls abandoned", st)
		}
		fl.down.Store(false)
		if err := l.SyncNow(ctx); err != nil {
			t.Fatal(err)
		}
		// the first sync back pushes this gateway's fallback admits; the
		// others push theirs within a sync: until the next, it falls back
		if !l.Stats().Degraded {
			t.Fatal("no longer degraded after the first sync back")
		}
		if err := l.SyncNow(ctx); err != nil { // it must not push them again
			t.Fatal(err)
		}
		if l.Stats().Degraded {
			t.Fatal("still degraded after two good syncs")
		}
		if n := len(mem.Stamps("k", ck.now().UnixNano())); n != 5+admitted {
			t.Fatalf("store holds %d admits, want %d: each admit once", n, 5+admitted)
		}
	}
}

// The key table is bounded in bytes as well as in keys: 2,000 keys of 1 KiB
// through a gateway that holds 256 KiB of names keep it within them, and a
// key longer than MaxKeyLen is held as its SHA-256: a megabyte key costs
// 71 bytes, is limited as itself, and stays apart from another.
func TestKeyBytesAreBounded(t *testing.T) {
	ck := newClock()
	l := mustNew(t, Config{Limit: 2, MaxKeyBytes: 256 << 10, MaxKeyLen: 4 << 10, Now: ck.now, Logger: quietLog})
	ctx := context.Background()
	for i := range 2000 {
		mustAllow(l.Allow(ctx, fmt.Sprintf("%01024d", i)))
	}
	if st := l.Stats(); st.KeyBytes > 256<<10 || st.Keys > 256 || st.Evicted < 1744 {
		t.Fatalf("%+v: want at most 256 KiB of names, 256 keys", st)
	}
	huge := strings.Repeat("a", 1<<20)
	other := huge[:len(huge)-1] + "b"
	before := l.Stats().KeyBytes
	got := []bool{mustAllow(l.Allow(ctx, huge)).Allowed, mustAllow(l.Allow(ctx, huge)).Allowed, mustAllow(l.Allow(ctx, huge)).Allowed, mustAllow(l.Allow(ctx, other)).Allowed}
	if !got[0] || !got[1] || got[2] || !got[3] {
		t.Fatalf("a 1 MiB key and another: %v, want admitted twice under L = 2, then rejected, and the other admitted", got)
	}
	if grew := l.Stats().KeyBytes - before; grew > 2*71 {
		t.Fatalf("two 1 MiB keys grew the key table's names by %d bytes, want their hashes' 142 at most", grew)
	}
}

// A bad per-key limit or cost is refused with an error and counts nothing:
// it is never coerced into a limit the caller did not ask for.
func TestBadLimitsAreRefused(t *testing.T) {
	ck := newClock()
	st := memstore.New()
	l := mustNew(t, Config{Limit: 10, Now: ck.now, Store: st})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		lim  Limit
		n    int
	}{
		{"zero limit", Limit{Requests: 0, Window: time.Minute}, 1},
		{"negative limit", Limit{Requests: -3, Window: time.Minute}, 1},
		{"zero window", Limit{Requests: 10, Window: 0}, 1},
		{"negative window", Limit{Requests: 10, Window: -time.Second}, 1},
		{"negative cost", Limit{Requests: 10, Window: time.Minute}, -1},
		{"zero cost", Limit{Requests: 10, Window: time.Minute}, 0},
	} {
		for i := 0; i < 50; i++ {
			d, err := l.AllowLimit(ctx, "k", c.lim, c.n)
			if err == nil || d.Allowed {
				t.Fatalf("%s: AllowLimit(%+v, %d) = %+v, %v; want refused with an error", c.name, c.lim, c.n, d, err)
			}
		}
	}
	if _, err := l.AllowN(ctx, "k", -5); err == nil {
		t.Fatal("AllowN with a negative cost: no error")
	}
	if n := l.Stats().Keys; n != 0 {
		t.Fatalf("refused requests created %d keys", n)
	}
	if err := l.SyncNow(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(st.Stamps("k", ck.now().UnixNano())); n != 0 {
		t.Fatalf("refused requests reached the store: %d admits", n)
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []Config{{Design: "magic"}, {Gateways: 2, Gateway: 2}, {Limit: -1}, {Timeout: -time.Second}} {
		if l, err := New(c); err == nil {
			l.Close()
			t.Errorf("New(%+v) accepted it", c)
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
