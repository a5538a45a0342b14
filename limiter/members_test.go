package limiter

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// With membership each gateway learns K and its index from Redis: three
// join and see K = 3 with indexes 0, 1, 2; one closes (and leaves) and the
// others see K = 2; one stops renewing (its registration written by hand,
// never renewed) and is forgotten after its TTL; a newcomer takes the
// lowest free index; and split's local quota follows K.
func TestMembership(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 300 * time.Millisecond
	open := func() *Limiter {
		t.Helper()
		st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		l, err := New(Config{Design: "split", Limit: 12, Membership: true, Store: st, ClaimTTL: ttl, Fleet: "m", Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// waitK waits (boundedly) until every limiter sees K = k.
	waitK := func(k int, ls ...*Limiter) {
		t.Helper()
		for range 100 {
			ok := true
			for _, l := range ls {
				ok = ok && l.Fleet().Gateways == k
			}
			if ok {
				return
			}
			time.Sleep(ttl / 10)
		}
		for _, l := range ls {
			t.Errorf("gateway %d sees %+v", l.Fleet().Gateway, l.Fleet())
		}
		t.Fatalf("not every gateway sees K = %d", k)
	}
	a, b, c := open(), open(), open()
	defer a.Close()
	defer b.Close()
	waitK(3, a, b, c)
	idx := []int{a.Fleet().Gateway, b.Fleet().Gateway, c.Fleet().Gateway}
	slices.Sort(idx)
	if !slices.Equal(idx, []int{0, 1, 2}) {
		t.Fatalf("indexes %v, want 0, 1, 2", idx)
	}
	// split admits ceil(L/K) a gateway: 4 of 12 at K = 3.
	if n := admitted(a, "q", 10); n != 4 {
		t.Fatalf("at K = 3 split admitted %d of 10, want ceil(12/3) = 4", n)
	}
	cIndex := c.Fleet().Gateway
	c.Close()
	waitK(2, a, b)
	if n := admitted(a, "q2", 10); n != 6 {
		t.Fatalf("at K = 2 split admitted %d of 10, want ceil(12/2) = 6", n)
	}
	// Key q, made under K = 3 with its 4 admits, is made anew under
	// K = 2 and keeps counting them: 2 more, not 6.
	if n := admitted(a, "q", 10); n != 2 {
		t.Fatalf("key q after K went from 3 to 2: %d more admitted, want 6 - 4 = 2", n)
	}
	// A member that stops renewing is forgotten after its TTL.
	rdb := srv.Client()
	defer rdb.Close()
	deadline := time.Now().Add(ttl).UnixMilli()
	if err := rdb.HSet(context.Background(), "fl:members:m", "7", fmt.Sprintf("crashed|%d", deadline)).Err(); err != nil {
		t.Fatal(err)
	}
	waitK(3, a, b)
	waitK(2, a, b)
	d := open()
	defer d.Close()
	if got := d.Fleet().Gateway; got != cIndex {
		t.Fatalf("a newcomer took index %d, want the lowest free one, %d", got, cIndex)
	}
	waitK(3, a, b, d)
	if a.Fleet().Changes < 3 {
		t.Fatalf("gateway a counted %d fleet changes, want at least 3", a.Fleet().Changes)
	}
}

// admitted counts the admits of n requests on a fresh key.
func admitted(l *Limiter, key string, n int) int {
	k := 0
	for range n {
		if mustAllow(l.Allow(context.Background(), key)).Allowed {
			k++
		}
	}
	return k
}

// Membership refuses a store that cannot keep it, and fixed sizes beside it.
func TestMembershipNeedsASharedStore(t *testing.T) {
	if _, err := New(Config{Membership: true, Logger: quietLog}); err == nil {
		t.Fatal("membership on the embedded store was taken")
	}
	if _, err := New(Config{Membership: true, Gateways: 3, Logger: quietLog}); err == nil {
		t.Fatal("membership with Gateways set was taken")
	}
}

// A member that crashes holding lease slots: once it is forgotten, the
// live gateways' syncs return its slots to the room.
func TestGoneMembersSlotsComeBack(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 300 * time.Millisecond
	ctx := context.Background()
	st, err := redisstore.New(ctx, redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rdb := srv.Client()
	defer rdb.Close()
	// The crashed member: index 1, registered until ttl from now, and
	// holding every slot of key k.
	if err := rdb.HSet(ctx, "fl:members:g", "1", fmt.Sprintf("crashed|%d", time.Now().Add(ttl).UnixMilli())).Err(); err != nil {
		t.Fatal(err)
	}
	k := store.Key{Name: "k", Limit: 10, Window: window.Spec{Size: time.Minute}}
	items := []store.SyncItem{{Key: k, Push: store.Push{Gateway: 1, Ask: 10}}}
	if err := st.Sync(ctx, time.Now().UnixNano(), items); err != nil || items[0].Pull.Granted != 10 {
		t.Fatalf("the crashed member's grant: %d, %v", items[0].Pull.Granted, err)
	}
	l, err := New(Config{Design: "lease-ask", Limit: 10, Membership: true, Store: st, ClaimTTL: ttl, Sync: 50 * time.Millisecond, Fleet: "g", Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if f := l.Fleet(); f.Gateways != 2 || f.Gateway != 0 {
		t.Fatalf("joined as %+v, want gateway 0 of 2", f)
	}
	if mustAllow(l.Allow(ctx, "k")).Allowed {
		t.Fatal("admitted while the crashed member holds every slot")
	}
	for range 60 {
		time.Sleep(ttl / 6)
		if mustAllow(l.Allow(ctx, "k")).Allowed {
			if f := l.Fleet(); f.Gateways != 1 {
				t.Fatalf("admitted while it sees %+v", f)
			}
			return
		}
	}
	t.Fatalf("the crashed member's slots never came back; the fleet is %+v", l.Fleet())
}
