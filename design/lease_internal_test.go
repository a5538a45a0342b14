package design

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// A lease over a long window keeps at most MaxLeaseBuckets counters, and
// still sizes its ask on its arrivals per sync interval.
func TestLeaseMemoryIsBounded(t *testing.T) {
	year := 365 * 24 * time.Hour
	for _, sync := range []time.Duration{time.Nanosecond, time.Millisecond, time.Second} {
		g := newLease(Config{Limit: 1 << 30, Window: window.Spec{Size: year}, Gateways: 2, Sync: sync}, true).(*lease)
		if len(g.arr.intervals) > MaxLeaseBuckets {
			t.Fatalf("Δ=%v: %d counters for a year's window", sync, len(g.arr.intervals))
		}
	}
	// Δ = 1 s over a day: 86,400 intervals share 4,096 buckets of 22.
	g := newLease(Config{Limit: 1 << 30, Window: window.Spec{Size: 24 * time.Hour}, Gateways: 2, Sync: time.Second}, false).(*lease)
	if g.arr.span != 22 {
		t.Fatalf("span %d, want 22", g.arr.span)
	}
	for i := 0; i < 3*86400; i++ { // 10 arrivals every interval, three days long
		g.cur = 10
		g.SyncPush(int64(i) * int64(time.Second))
		g.SyncPull(int64(i)*int64(time.Second), pullNothing)
	}
	if w := g.want(); w < 15 || w > 16 { // ceil(1.5 * ~10 + 1), give or take a bucket's share
		t.Fatalf("want %d after a steady 10 per interval, want about 16", w)
	}
	g.Skip(1 << 40) // a long idle stretch forgets everything, at once
	if g.arr.sum != 0 || g.want() != 1 {
		t.Fatalf("after a long skip: sum %d want %d", g.arr.sum, g.want())
	}
}

var pullNothing = store.Pull{}
