package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
	"github.com/fleetlimit/fleetlimit/store/storetest"
	"github.com/fleetlimit/fleetlimit/window"
)

// TestCountersAgainstMemstore drives the counted layout on a real Redis and
// memstore, the reference, with the same random operations (pushes with
// retries and restarts, central checks with carried pushes, grants) and
// requires every answer to be the same.
func TestCountersAgainstMemstore(t *testing.T) {
	srv := redistest.Start(t)
	rs, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	specs := []window.Spec{
		{Size: 10 * time.Second, Buckets: 10},
		{Size: 10 * time.Second, Buckets: 7}, // a width of 1,428,572 µs
		{Size: 3 * time.Second, Kind: window.Fixed, Buckets: 1},
	}
	for i, sp := range specs {
		t.Run(sp.String(), func(t *testing.T) {
			differential(t, rs, sp, uint64(i+1), 4000, 0)
		})
	}
}

// TestSpareAgainstMemstore drives the exact log's spare lease slots
// (store.Push.Spare, Rate; store.Query.Spare) on a real Redis and on
// memstore with the same random operations, and requires every answer to
// be the same: the lent slots, the contended key, the ranked grants.
func TestSpareAgainstMemstore(t *testing.T) {
	srv := redistest.Start(t)
	rs, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for i, spare := range []int{1, 4} {
		t.Run(fmt.Sprint("spare ", spare), func(t *testing.T) {
			differential(t, rs, window.Spec{Size: 5 * time.Second}, uint64(10+i), 4000, spare)
		})
	}
}

// TestSpareRefusedOnCounters: the counted layout has no spare slots, and
// says so rather than lending none.
func TestSpareRefusedOnCounters(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rs, err := redisstore.New(ctx, redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	k := store.Key{Name: "spare-counted", Limit: 10, Window: window.Spec{Size: 10 * time.Second, Buckets: 10}}
	err = rs.Sync(ctx, storetest.T0, []store.SyncItem{{Key: k, Push: store.Push{Gateway: 0, Ask: 1, Spare: 1}}})
	if err == nil {
		t.Fatal("a spare sync on window buckets was taken")
	}
	if _, err := rs.Ask(ctx, storetest.T0, k, 0, store.Query{Kind: store.QueryCentral, N: 1, Spare: 1}); err == nil {
		t.Fatal("a spare central check on window buckets was taken")
	}
}

// gwState is one gateway's pushes of one key: its epoch, the sequence
// number of its first unacknowledged admit, and those admits.
type gwState struct {
	epoch  uint64
	seq    uint64
	stamps []int64
	counts []int
	// the last query's ID, and the withdrawals of queries whose answers
	// were lost, sent with every push and query until acknowledged
	id      uint64
	pending []store.Withdrawal
}

// differential runs steps random operations on rs and memstore and
// compares their answers; with spare > 0, every sync and query lends that
// many slots beyond the limit, and syncs report random rates.
func differential(t *testing.T, rs *redisstore.Store, sp window.Spec, seed uint64, steps int, spare int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	ms := memstore.New()
	const gateways = 3
	keys := []store.Key{
		{Name: t.Name() + "/a", Limit: 20, Window: sp},
		{Name: t.Name() + "/b", Limit: 50, Window: sp},
	}
	st := make([][]gwState, len(keys))
	for k := range st {
		st[k] = make([]gwState, gateways)
		for g := range st[k] {
			st[k][g] = gwState{epoch: 1, seq: 1}
		}
	}
	now := storetest.T0
	push := func(k, g int) store.Push {
		s := &st[k][g]
		p := store.Push{Gateway: g, Admits: s.stamps, Counts: s.counts, Seq: s.seq, Epoch: s.epoch, WantOwn: true}
		if len(s.pending) > 0 {
			p.Repair = &store.Repair{Withdraw: s.pending}
		}
		return p
	}
	acked := func(k, g int) {
		s := &st[k][g]
		if rng.IntN(5) == 0 {
			return // the answer was lost: the next push repeats these admits
		}
		s.seq += uint64(len(s.stamps))
		s.stamps, s.counts, s.pending = nil, nil, nil
	}
	for step := range steps {
		now += rng.Int64N(int64(700 * time.Millisecond))
		k, g := rng.IntN(len(keys)), rng.IntN(gateways)
		where := fmt.Sprintf("step %d (key %d, gateway %d, +%v)", step, k, g, time.Duration(now-storetest.T0))
		switch op := rng.IntN(10); {
		case op < 4: // local admits, pushed later
			s := &st[k][g]
			for range 1 + rng.IntN(3) {
				s.stamps = append(s.stamps, now-rng.Int64N(int64(50*time.Millisecond))*int64(len(s.stamps)&1))
				s.counts = append(s.counts, 1+rng.IntN(3))
			}
			slices.Sort(s.stamps)
		case op == 4: // a restart: unsynced admits lost, a new epoch
			st[k][g] = gwState{epoch: st[k][g].epoch + 1, seq: 1}
		case op < 8: // a sync of every key by g
			var horizon int64
			if rng.IntN(2) == 0 {
				horizon = int64(2 * time.Second)
			}
			ask := rng.IntN(4)
			var gone []int
			if rng.IntN(4) == 0 {
				gone = []int{(g + 1) % gateways}
			}
			a, b := make([]store.SyncItem, len(keys)), make([]store.SyncItem, len(keys))
			for i := range keys {
				p := push(i, g)
				p.Horizon, p.Ask, p.Gone = horizon, ask, gone
				if spare > 0 {
					p.Spare, p.Rate = spare, rng.IntN(3000) // SlotWorth's Poisson tail
					if rng.IntN(2) == 0 {
						p.Rate = 30_000 + rng.IntN(30_000) // its normal approximation
					}
					if rng.IntN(8) == 0 {
						p.Refused = 1 + rng.IntN(3) // refusals the gateway made alone
					}
				}
				a[i] = store.SyncItem{Key: keys[i], Push: p}
				b[i] = store.SyncItem{Key: keys[i], Push: p}
			}
			if err := ms.Sync(ctx, now, a); err != nil {
				t.Fatal(err)
			}
			if err := rs.Sync(ctx, now, b); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			for i := range keys {
				if want, got := norm(a[i].Pull), norm(b[i].Pull); want != got {
					t.Fatalf("%s: sync of key %d: redis %s, memstore %s", where, i, got, want)
				}
				acked(i, g)
			}
		default: // a central check, perhaps carrying the push; or a grant
			s := &st[k][g]
			s.id++
			q := store.Query{Kind: store.QueryCentral, N: 1 + rng.IntN(3), Call: &store.Call{Own: true, ID: s.id, Epoch: s.epoch, Withdraw: s.pending}}
			if op == 9 {
				q = store.Query{Kind: store.QueryGrant, N: 1 + rng.IntN(5), Call: &store.Call{Epoch: s.epoch, Withdraw: s.pending}}
			}
			q.Spare = int32(spare)
			if spare > 0 && q.Kind == store.QueryCentral && rng.IntN(3) == 0 {
				q.TopUp = int16(1 + rng.IntN(4)) // slots with the admit
			}
			carried := len(st[k][g].stamps) > 0 && rng.IntN(2) == 0 && op == 8
			if carried {
				p := push(k, g)
				q.Carry = &p
			}
			want, err := ms.Ask(ctx, now, keys[k], g, q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := rs.Ask(ctx, now, keys[k], g, q)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			got.Gen, want.Gen = 0, 0 // memstore never forgets: its keys have no lives
			if got != want {
				t.Fatalf("%s: %+v answered %+v on redis, %+v on memstore", where, q, got, want)
			}
			s.pending = nil // the query took them
			if carried {
				acked(k, g)
			}
			if q.Kind == store.QueryCentral && rng.IntN(3) == 0 { // its answer was lost: withdraw it
				s.pending = append(s.pending, store.Withdrawal{ID: q.Call.ID, At: now, N: q.N})
			}
		}
	}
}

// norm prints a pull with its expiring admits as stamp*count, stamps to
// the microsecond that Redis keeps, in order.
func norm(p store.Pull) string {
	s := fmt.Sprintf("count %d own %d granted %d outstanding %d expiring", p.Count, p.Own, p.Granted, p.Outstanding)
	es := make([]string, len(p.Expiring))
	for i, e := range p.Expiring {
		es[i] = fmt.Sprintf(" +%v*%d", time.Duration(e-storetest.T0).Truncate(time.Microsecond), store.CountAt(p.ExpiringCounts, i))
	}
	slices.Sort(es) // admits of one stamp come in either order
	return s + strings.Join(es, "")
}

// A counted key whose window is re-bucketed (another ring size) keeps its
// count, moved into the newest bucket: counted longer, never less.
func TestCountersRingChange(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rs, err := redisstore.New(ctx, redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	sync := func(now int64, k store.Key, p store.Push) store.Pull {
		t.Helper()
		items := []store.SyncItem{{Key: k, Push: p}}
		if err := rs.Sync(ctx, now, items); err != nil {
			t.Fatal(err)
		}
		return items[0].Pull
	}
	sec := int64(time.Second)
	t0 := storetest.T0
	k := store.Key{Name: "rebucket", Limit: 100, Window: window.Spec{Size: 10 * time.Second, Buckets: 10}}
	sync(t0+5*sec, k, store.Push{Gateway: 0, Admits: []int64{t0 + sec, t0 + 4*sec}, Counts: []int{3, 4}, Seq: 1, Epoch: 1})
	k.Window.Buckets = 5
	p := sync(t0+6*sec, k, store.Push{Gateway: 1, Admits: []int64{t0 + 6*sec}, Seq: 1, Epoch: 1})
	if p.Count != 8 {
		t.Fatalf("after re-bucketing the count is %d, want the 7 carried over and 1 new", p.Count)
	}
	// The carried 7 sit in the newest bucket the ring holds at 6 s,
	// [6 s, 8 s) of 2 s buckets, and leave the window at 18 s with the new
	// admit: later than the exact log would let them go (11 s and 14 s),
	// never earlier.
	if p = sync(t0+14*sec+1, k, store.Push{Gateway: 1}); p.Count != 8 {
		t.Fatalf("at 14 s the count is %d, want all 8 still counted", p.Count)
	}
	if p = sync(t0+18*sec, k, store.Push{Gateway: 1}); p.Count != 0 {
		t.Fatalf("at 18 s the count is %d, want 0", p.Count)
	}
}
