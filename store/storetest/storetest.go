// Package storetest is the contract of store.Backend as one table of tests,
// run against every backend (memstore and Redis), so that both speak exactly
// the same protocol.
package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// T0 is a realistic wall-clock time (ns) the contract starts at.
const T0 = int64(1_790_000_000_000_000_000)

const ms = int64(time.Millisecond)

func at(msOff int64) int64 { return T0 + msOff*ms }

// Run runs the contract against backends made by newBackend, a fresh one
// per subtest (keys are named per subtest, too).
func Run(t *testing.T, newBackend func(t *testing.T) store.Backend) {
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) { c.run(t, newBackend(t)) })
	}
}

var ctx = context.Background()

var sliding = window.Spec{Size: 10 * time.Second}

func key(t *testing.T, limit int, spec window.Spec) store.Key {
	return store.Key{Name: "contract/" + t.Name(), Limit: limit, Window: spec}
}

func sync1(t *testing.T, b store.Backend, now int64, k store.Key, p store.Push) store.Pull {
	t.Helper()
	items := []store.SyncItem{{Key: k, Push: p}}
	if err := b.Sync(ctx, now, items); err != nil {
		t.Fatal(err)
	}
	return items[0].Pull
}

// central is the central check of n requests from gateway gw.
func central(b store.Backend, now int64, k store.Key, gw, n int) (bool, int, error) {
	a, err := b.Ask(ctx, now, k, gw, store.Query{Kind: store.QueryCentral, N: n})
	return a.Admit, a.Count, err
}

// grant asks for n lease slots for gateway gw.
func grant(b store.Backend, now int64, k store.Key, gw, n int) (int, error) {
	a, err := b.Ask(ctx, now, k, gw, store.Query{Kind: store.QueryGrant, N: n})
	return a.Granted, err
}

// askAll asks the queries qs of gateway gw on parts, the limits of one key,
// as one (store.MultiAsker), and returns the answers.
func askAll(t *testing.T, b store.Backend, now int64, gw int, parts []store.Key, qs ...store.Query) []store.Answer {
	t.Helper()
	m, ok := b.(store.MultiAsker)
	if !ok {
		t.Fatalf("%T answers no key with several limits (store.MultiAsker)", b)
	}
	items := make([]store.AskItem, len(parts))
	for i := range parts {
		items[i] = store.AskItem{Key: parts[i], Query: qs[i]}
	}
	if err := m.AskAll(ctx, now, gw, items); err != nil {
		t.Fatal(err)
	}
	as := make([]store.Answer, len(items))
	for i := range items {
		as[i] = items[i].Answer
	}
	return as
}

// parts are the limits of one key: 3 a second (sliding unless fixed) and 5
// in 10 s.
func parts(t *testing.T, kind window.Kind) []store.Key {
	k := key(t, 3, window.Spec{Size: time.Second, Kind: kind})
	k2 := key(t, 5, window.Spec{Size: 10 * time.Second, Kind: kind})
	k.Part, k2.Part = 1, 2
	return []store.Key{k, k2}
}

// contract is the table of the contract's cases.
var contract = []struct {
	name string
	run  func(t *testing.T, b store.Backend)
}{
	{"several limits: central checks admit all or none", func(t *testing.T, b store.Backend) {
		ks := parts(t, window.Sliding)
		c := store.Query{Kind: store.QueryCentral, N: 1}
		for i := range 3 {
			as := askAll(t, b, at(int64(10*i)), 0, ks, c, c)
			if !as[0].Admit || !as[1].Admit || as[0].Count != i+1 || as[1].Count != i+1 {
				t.Fatalf("request %d: %+v, want both admitted at count %d", i+1, as, i+1)
			}
		}
		// the second is full: the fourth is refused, and spends none of the 10 s
		as := askAll(t, b, at(40), 0, ks, c, c)
		if as[0].Admit || as[1].Admit || as[0].Count != 3 || as[1].Count != 3 {
			t.Fatalf("over the first limit: %+v, want neither admitted, counts 3 and 3", as)
		}
		// a second later the 10 s limit binds after two more
		for i := range 2 {
			if as := askAll(t, b, at(1100+int64(i)), 1, ks, c, c); !as[0].Admit || !as[1].Admit {
				t.Fatalf("after a second, request %d: %+v", i+1, as)
			}
		}
		as = askAll(t, b, at(1200), 1, ks, c, c)
		if as[0].Admit || as[1].Admit || as[0].Count != 2 || as[1].Count != 5 {
			t.Fatalf("over the second limit: %+v, want neither admitted, counts 2 and 5", as)
		}
		// a part that does not ask is left alone
		as = askAll(t, b, at(1300), 1, ks, store.Query{}, c)
		if as[1].Admit || as[0] != (store.Answer{}) {
			t.Fatalf("one part asking: %+v", as)
		}
	}},
	{"several limits: counters count a refused request on the limits it passed", func(t *testing.T, b store.Backend) {
		ks := parts(t, window.Fixed)
		c := store.Query{Kind: store.QueryCounter, N: 1}
		t0 := (T0/int64(time.Minute) + 1) * int64(time.Minute) // the start of a fixed window of both
		for i := range 3 {
			as := askAll(t, b, t0+int64(i)*ms, 0, ks, c, c)
			if as[0].Count != i+1 || as[1].Count != i+1 {
				t.Fatalf("request %d: counts %d and %d", i+1, as[0].Count, as[1].Count)
			}
		}
		as := askAll(t, b, t0+5*ms, 0, ks, c, c)
		if as[0].Count != 4 || as[1].Count != 3 {
			t.Fatalf("over the first limit: counts %d and %d, want 4 (it passed it) and 3 (it fits, and is refused)", as[0].Count, as[1].Count)
		}
	}},
	{"several limits: central checks with a spare", func(t *testing.T, b store.Backend) {
		ks := parts(t, window.Sliding)
		if p := sync1(t, b, at(0), ks[0], store.Push{Gateway: 1, Ask: 9, Spare: 1, Rate: 1000}); p.Granted != 4 {
			t.Fatalf("spare grant on the first part: %d, want 4 (3 + 1)", p.Granted)
		}
		c := store.Query{Kind: store.QueryCentral, N: 1, Spare: 1}
		// the first part holds 4 lent slots: a check fits it while its
		// admits, the slots and the request make at most 3 + 1
		if as := askAll(t, b, at(10), 0, ks, c, c); as[0].Admit || as[1].Admit {
			t.Fatalf("with every spare slot lent: %+v, want refused", as)
		}
		sync1(t, b, at(20), ks[0], store.Push{Gateway: 1, Ask: 2, Spare: 1, Rate: 1000})
		for i := range 2 {
			if as := askAll(t, b, at(30+int64(i)), 0, ks, c, c); !as[0].Admit || !as[1].Admit {
				t.Fatalf("check %d beside 2 lent slots: %+v, want admitted", i+1, as)
			}
		}
		if as := askAll(t, b, at(40), 0, ks, c, c); as[0].Admit || as[1].Admit || as[0].Count != 2 {
			t.Fatalf("check 3 beside 2 lent slots: %+v, want refused at 2", as)
		}
	}},
	{"several limits: grants are answered alone", func(t *testing.T, b store.Backend) {
		ks := parts(t, window.Sliding)
		as := askAll(t, b, at(0), 0, ks, store.Query{Kind: store.QueryGrant, N: 4}, store.Query{Kind: store.QueryGrant, N: 4})
		if as[0].Granted != 3 || as[1].Granted != 4 {
			t.Fatalf("granted %d and %d, want 3 and 4", as[0].Granted, as[1].Granted)
		}
	}},
	{"several limits: a carried push counts before the check", func(t *testing.T, b store.Backend) {
		ks := parts(t, window.Sliding)
		carry := &store.Push{Gateway: 0, Admits: []int64{at(1), at(2)}, Seq: 1}
		carry2 := &store.Push{Gateway: 0, Admits: []int64{at(1), at(2)}, Seq: 1}
		as := askAll(t, b, at(10), 0, ks, store.Query{Kind: store.QueryCentral, N: 2, Carry: carry}, store.Query{Kind: store.QueryCentral, N: 2, Carry: carry2})
		if as[0].Admit || as[1].Admit || as[0].Count != 2 || as[1].Count != 2 {
			t.Fatalf("%+v: want the carried 2 counted and 2 more refused by the first limit (3)", as)
		}
		// the parts are kept apart from a key of one limit of the same name
		one := ks[0]
		one.Part = 0
		if p := sync1(t, b, at(20), one, store.Push{Gateway: 0}); p.Count != 0 {
			t.Fatalf("the key of one limit counts %d of its parts' admits", p.Count)
		}
	}},
	{"push and pull", func(t *testing.T, b store.Backend) {
		k := key(t, 100, sliding)
		sync1(t, b, at(500), k, store.Push{Gateway: 1, Admits: []int64{at(200), at(400)}, Seq: 1})
		p := sync1(t, b, at(600), k, store.Push{Gateway: 0, Admits: []int64{at(100), at(300), at(500)}, Seq: 1, WantOwn: true})
		if p.Count != 5 || p.Own != 3 {
			t.Fatalf("count %d own %d, want 5 and 3", p.Count, p.Own)
		}
		// At 10.25 s the stamps at 0.1 s and 0.2 s have left; with a
		// horizon of 1 s, those leaving before 11.25 s are 0.3 to 0.5.
		p = sync1(t, b, at(10250), k, store.Push{Gateway: 1, Horizon: time.Second.Nanoseconds(), WantOwn: true})
		if p.Count != 3 || p.Own != 1 {
			t.Fatalf("after ageing: count %d own %d, want 3 and 1", p.Count, p.Own)
		}
		if !slices.Equal(p.Expiring, []int64{at(300), at(400), at(500)}) {
			t.Fatalf("expiring %v, want [+300ms +400ms +500ms]", rel(p.Expiring))
		}
		p = sync1(t, b, at(10250), k, store.Push{Gateway: 1, Horizon: (200 * time.Millisecond).Nanoseconds()})
		if !slices.Equal(p.Expiring, []int64{at(300), at(400)}) {
			t.Fatalf("expiring within 200ms %v, want [+300ms +400ms]", rel(p.Expiring))
		}
	}},
	{"a retried push counts once", func(t *testing.T, b store.Backend) {
		k := key(t, 100, sliding)
		sync1(t, b, at(100), k, store.Push{Gateway: 2, Admits: []int64{at(10), at(20), at(30)}, Seq: 1})
		p := sync1(t, b, at(200), k, store.Push{Gateway: 2, Admits: []int64{at(10), at(20), at(30), at(150)}, Seq: 1})
		if p.Count != 4 {
			t.Fatalf("count %d after a retry, want 4", p.Count)
		}
		// An old try arriving late changes nothing.
		p = sync1(t, b, at(300), k, store.Push{Gateway: 2, Admits: []int64{at(10)}, Seq: 1})
		if p.Count != 4 {
			t.Fatalf("count %d after a stale try, want 4", p.Count)
		}
		p = sync1(t, b, at(400), k, store.Push{Gateway: 2, Admits: []int64{at(350)}, Seq: 5})
		if p.Count != 5 {
			t.Fatalf("count %d, want 5", p.Count)
		}
	}},
	{"a re-created key's pushes count", func(t *testing.T, b store.Backend) {
		k := key(t, 100, sliding)
		// The first life of the key at gateway 1 pushes two admits ...
		sync1(t, b, at(100), k, store.Push{Gateway: 1, Epoch: 5, Admits: []int64{at(10), at(20)}, Seq: 1})
		// ... the key is re-created (restart, eviction, limit change) and
		// its new life numbers its admits from 1 again.
		p := sync1(t, b, at(200), k, store.Push{Gateway: 1, Epoch: 9, Admits: []int64{at(150), at(160)}, Seq: 1})
		if p.Count != 4 {
			t.Fatalf("count %d after the new life's push, want 4: its admits must not be taken for the old ones", p.Count)
		}
		// A late retry of the old life changes nothing, nor does the new
		// life's own retry.
		sync1(t, b, at(300), k, store.Push{Gateway: 1, Epoch: 5, Admits: []int64{at(10), at(20)}, Seq: 1})
		p = sync1(t, b, at(300), k, store.Push{Gateway: 1, Epoch: 9, Admits: []int64{at(150), at(160), at(250)}, Seq: 1})
		if p.Count != 5 {
			t.Fatalf("count %d after retries, want 5", p.Count)
		}
	}},
	{"an admit of many requests is one entry", func(t *testing.T, b store.Backend) {
		k := key(t, 5000, sliding)
		push := store.Push{Gateway: 0, Epoch: 1, Admits: []int64{at(10), at(20)}, Counts: []int{3, 1000}, Seq: 1, WantOwn: true}
		if p := sync1(t, b, at(100), k, push); p.Count != 1003 || p.Own != 1003 {
			t.Fatalf("count %d own %d, want 1003", p.Count, p.Own)
		}
		if p := sync1(t, b, at(100), k, push); p.Count != 1003 { // a retry
			t.Fatalf("count %d after a retry, want 1003", p.Count)
		}
		if ok, count, err := central(b, at(200), k, 1, 2000); err != nil || !ok || count != 3003 {
			t.Fatalf("central check of 2000: %v %d %v", ok, count, err)
		}
		if ok, _, _ := central(b, at(300), k, 1, 1998); ok {
			t.Fatal("central check of 1998 admitted with 3003 of 5000 used")
		}
		p := sync1(t, b, at(10015), k, store.Push{Gateway: 2, Horizon: time.Second.Nanoseconds()})
		if p.Count != 3000 || !slices.Equal(p.Expiring, []int64{at(20), at(200)}) || !slices.Equal(p.ExpiringCounts, []int{1000, 2000}) {
			t.Fatalf("after the first left: count %d expiring %v counts %v", p.Count, rel(p.Expiring), p.ExpiringCounts)
		}
	}},
	{"stale stamps are dropped", func(t *testing.T, b store.Backend) {
		k := key(t, 100, sliding)
		p := sync1(t, b, at(20000), k, store.Push{Admits: []int64{at(5000), at(15000)}, Seq: 1})
		if p.Count != 1 {
			t.Fatalf("count %d, want 1", p.Count)
		}
	}},
	{"central check", func(t *testing.T, b store.Backend) {
		k := key(t, 2, sliding)
		for i, c := range []struct {
			at    int64
			n     int
			want  bool
			count int
		}{{0, 1, true, 1}, {1, 2, false, 1}, {1, 1, true, 2}, {2, 1, false, 2},
			{10000, 1, true, 2}, // 0 left the window at 10 s
			{10001, 1, true, 2}, {10001, 1, false, 2}} {
			ok, count, err := central(b, at(c.at), k, 0, c.n)
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.want || count != c.count {
				t.Fatalf("row %d: Central(+%dms, n=%d) = %v, %d; want %v, %d", i, c.at, c.n, ok, count, c.want, c.count)
			}
		}
	}},
	{"lease grants and returns", func(t *testing.T, b store.Backend) {
		k := key(t, 10, sliding)
		if g := sync1(t, b, at(0), k, store.Push{Gateway: 0, Ask: 6}).Granted; g != 6 {
			t.Fatalf("first grant %d, want 6", g)
		}
		if g := sync1(t, b, at(0), k, store.Push{Gateway: 1, Ask: 6}).Granted; g != 4 {
			t.Fatalf("second grant %d, want 4: outstanding slots count as used", g)
		}
		if ok, _, _ := central(b, at(1), k, 2, 1); ok {
			t.Fatal("central check admitted while grants fill the limit")
		}
		// Gateway 0 used 2 slots, hands back 4, asks for 10: 2 admitted
		// + 4 held by gateway 1 leave 4.
		p := sync1(t, b, at(1000), k, store.Push{Gateway: 0, Admits: []int64{at(1), at(2)}, Seq: 1, Ask: 10})
		if p.Granted != 4 || p.Count != 2 {
			t.Fatalf("after hand-back: granted %d count %d, want 4 and 2", p.Granted, p.Count)
		}
		if g, err := grant(b, at(1000), k, 2, 5); err != nil || g != 0 {
			t.Fatalf("round-trip grant %d (%v): want 0, the limit is reached", g, err)
		}
		// A retried sync (same push) settles the same slots again.
		p = sync1(t, b, at(1000), k, store.Push{Gateway: 0, Admits: []int64{at(1), at(2)}, Seq: 1, Ask: 10})
		if p.Granted != 4 || p.Count != 2 {
			t.Fatalf("retried sync: granted %d count %d, want 4 and 2", p.Granted, p.Count)
		}
		// After 10 s the admits at +1ms, +2ms leave: 2 more slots.
		if g, _ := grant(b, at(10003), k, 2, 5); g != 2 {
			t.Fatalf("grant after ageing %d, want 2", g)
		}
	}},
	{"a gone gateway's lease slots come back", func(t *testing.T, b store.Backend) {
		for _, spec := range []window.Spec{sliding, {Size: 10 * time.Second, Buckets: 10}} {
			k := key(t, 10, spec)
			k.Name += "/" + spec.String()
			if g := sync1(t, b, at(0), k, store.Push{Gateway: 2, Ask: 7}).Granted; g != 7 {
				t.Fatalf("%v: first grant %d, want 7", spec, g)
			}
			if g := sync1(t, b, at(10), k, store.Push{Gateway: 0, Ask: 10}).Granted; g != 3 {
				t.Fatalf("%v: second grant %d, want 3: gateway 2 holds 7", spec, g)
			}
			// Gateway 2 left the fleet: gateway 0's next sync settles its
			// slots, and the room is whole again.
			p := sync1(t, b, at(20), k, store.Push{Gateway: 0, Ask: 10, Gone: []int{2, 5}})
			if p.Granted != 10 {
				t.Fatalf("%v: grant after gateway 2 left %d, want 10", spec, p.Granted)
			}
			// A gone list never settles the pusher's own slots.
			p = sync1(t, b, at(30), k, store.Push{Gateway: 1, Ask: 4, Gone: []int{1}})
			if p.Granted != 0 {
				t.Fatalf("%v: gateway 1 granted %d beside gateway 0's 10", spec, p.Granted)
			}
		}
	}},
	{"fixed window", func(t *testing.T, b store.Backend) {
		k := key(t, 100, window.Spec{Size: 10 * time.Second, Kind: window.Fixed})
		// T0 is a multiple of 10 s, so windows start at T0 + 10n s.
		sync1(t, b, at(1000), k, store.Push{Admits: []int64{at(0), at(900)}, Seq: 1})
		if p := sync1(t, b, at(2000), k, store.Push{Horizon: time.Second.Nanoseconds()}); p.Count != 2 || len(p.Expiring) != 0 {
			t.Fatalf("mid-window: count %d expiring %d", p.Count, len(p.Expiring))
		}
		if p := sync1(t, b, at(9500), k, store.Push{Horizon: time.Second.Nanoseconds()}); len(p.Expiring) != 2 {
			t.Fatalf("near the boundary: expiring %v, want both", rel(p.Expiring))
		}
		if p := sync1(t, b, at(10000), k, store.Push{}); p.Count != 0 {
			t.Fatalf("after the boundary: count %d", p.Count)
		}
	}},
	{"a batch of many keys", func(t *testing.T, b store.Backend) {
		items := make([]store.SyncItem, 300)
		for i := range items {
			items[i] = store.SyncItem{
				Key:  store.Key{Name: fmt.Sprintf("%s/%d", t.Name(), i), Limit: 5 + i%3, Window: sliding},
				Push: store.Push{Gateway: i % 4, Admits: make([]int64, i%5), Seq: 1, Ask: 3, WantOwn: true},
			}
			for j := range items[i].Push.Admits {
				items[i].Push.Admits[j] = at(int64(j))
			}
		}
		if err := b.Sync(ctx, at(100), items); err != nil {
			t.Fatal(err)
		}
		for i, it := range items {
			wantGrant := min(3, 5+i%3-i%5)
			if it.Pull.Count != i%5 || it.Pull.Own != i%5 || it.Pull.Granted != wantGrant {
				t.Fatalf("key %d: %+v, want count %d granted %d", i, it.Pull, i%5, wantGrant)
			}
		}
	}},
	{"a query carries a push", func(t *testing.T, b store.Backend) {
		k := key(t, 3, sliding)
		carry := &store.Push{Gateway: 0, Admits: []int64{at(1), at(2)}, Seq: 1}
		a, err := b.Ask(ctx, at(10), k, 0, store.Query{Kind: store.QueryCentral, N: 1, Carry: carry})
		if err != nil || !a.Admit || a.Count != 3 {
			t.Fatalf("central carrying 2: %+v (%v), want admitted at count 3", a, err)
		}
		if ok, count, _ := central(b, at(10), k, 1, 1); ok || count != 3 {
			t.Fatalf("another gateway: %v at %d, want refused at 3: the carried admits count", ok, count)
		}
		// The sync that pushes the same admits again, and a retried
		// carry, change nothing.
		if p := sync1(t, b, at(20), k, *carry); p.Count != 3 {
			t.Fatalf("sync after the carry: count %d, want 3", p.Count)
		}
		a, err = b.Ask(ctx, at(30), k, 0, store.Query{Kind: store.QueryCentral, N: 0, Carry: carry})
		if err != nil || a.Count != 3 {
			t.Fatalf("retried carry: %+v (%v), want count 3", a, err)
		}
		// The carried admits keep their own stamps: at +10003ms those at
		// +1ms and +2ms have left, the central one at +10ms has not.
		if p := sync1(t, b, at(10003), k, store.Push{}); p.Count != 1 {
			t.Fatalf("after the carried stamps left: count %d, want 1", p.Count)
		}
		// A refused query still applies what it carries.
		carry = &store.Push{Gateway: 1, Admits: []int64{at(10004)}, Seq: 1}
		a, err = b.Ask(ctx, at(10005), k, 1, store.Query{Kind: store.QueryCentral, N: 5, Carry: carry})
		if err != nil || a.Admit || a.Count != 2 {
			t.Fatalf("refused central carrying 1: %+v (%v), want refused at count 2", a, err)
		}
	}},
	{"a withdrawn central admit is taken back", func(t *testing.T, b store.Backend) {
		for _, spec := range []window.Spec{sliding, {Size: 10 * time.Second, Buckets: 10}} {
			k := key(t, 10, spec)
			k.Name += "/" + spec.String()
			// gateway 0 pushes one admit at +100ms, then its central check
			// of 2 at +100ms (id 1) is logged but its answer never comes
			sync1(t, b, at(100), k, store.Push{Gateway: 0, Epoch: 7, Admits: []int64{at(100)}, Seq: 1})
			a, err := b.Ask(ctx, at(100), k, 0, store.Query{Kind: store.QueryCentral, N: 2, Call: &store.Call{ID: 1, Epoch: 7}})
			if err != nil || !a.Admit || a.Count != 3 {
				t.Fatalf("%v: central check: %+v (%v), want admitted at 3", spec, a, err)
			}
			w := []store.Withdrawal{{ID: 1, At: at(100), N: 2}}
			p := sync1(t, b, at(200), k, store.Push{Gateway: 0, Epoch: 7, Repair: &store.Repair{Withdraw: w}})
			if p.Count != 1 {
				t.Fatalf("%v: count %d after the withdrawal, want 1: the pushed admit alone", spec, p.Count)
			}
			// withdrawing it again (a retried push) changes nothing
			if p = sync1(t, b, at(300), k, store.Push{Gateway: 0, Epoch: 7, Repair: &store.Repair{Withdraw: w}}); p.Count != 1 {
				t.Fatalf("%v: count %d after the withdrawal's retry, want 1", spec, p.Count)
			}
		}
	}},
	{"a withdrawn query never lands", func(t *testing.T, b store.Backend) {
		for _, spec := range []window.Spec{sliding, {Size: 10 * time.Second, Buckets: 10}} {
			k := key(t, 10, spec)
			k.Name += "/" + spec.String()
			// the withdrawal of query 5 reaches the store before the query
			sync1(t, b, at(100), k, store.Push{Gateway: 1, Epoch: 3, Repair: &store.Repair{Withdraw: []store.Withdrawal{{ID: 5, At: at(90), N: 1}}}})
			if a, err := b.Ask(ctx, at(90), k, 1, store.Query{Kind: store.QueryCentral, N: 1, Call: &store.Call{ID: 5, Epoch: 3}}); err == nil {
				t.Fatalf("%v: a withdrawn query answered %+v, want an error: it must change nothing", spec, a)
			}
			if p := sync1(t, b, at(110), k, store.Push{Gateway: 1, Epoch: 3}); p.Count != 0 {
				t.Fatalf("%v: count %d after a withdrawn query, want 0", spec, p.Count)
			}
			// a later query of the gateway, or another's, is decided
			if a, err := b.Ask(ctx, at(120), k, 1, store.Query{Kind: store.QueryCentral, N: 1, Call: &store.Call{ID: 6, Epoch: 3}}); err != nil || !a.Admit || a.Count != 1 {
				t.Fatalf("%v: the next query: %+v (%v), want admitted at 1", spec, a, err)
			}
			if ok, _, err := central(b, at(130), k, 2, 1); err != nil || !ok {
				t.Fatalf("%v: another gateway's check refused (%v)", spec, err)
			}
		}
	}},
	{"a re-seed counts", func(t *testing.T, b store.Backend) {
		for _, spec := range []window.Spec{sliding, {Size: 10 * time.Second, Buckets: 10}} {
			k := key(t, 100, spec)
			k.Name += "/" + spec.String()
			push := store.Push{Gateway: 2, Epoch: 4, Admits: []int64{at(9000)}, Seq: 1,
				Repair: &store.Repair{Reseed: []int64{at(500), at(3000), at(8000)}, ReseedCounts: []int{2, 3, 1}, ReseedID: 1}}
			if p := sync1(t, b, at(9000), k, push); p.Count != 7 {
				t.Fatalf("%v: count %d after a re-seed of 6 and an admit, want 7", spec, p.Count)
			}
			// at +11.1 s the re-seeded admits of +0.5 s have left, counted to
			// the end of their bucket or not
			if p := sync1(t, b, at(11100), k, store.Push{Gateway: 2, Epoch: 4}); p.Count != 5 {
				t.Fatalf("%v: count %d after the first re-seeded admits left, want 5", spec, p.Count)
			}
		}
	}},
	{"a retried re-seed counts once", func(t *testing.T, b store.Backend) {
		for _, spec := range []window.Spec{sliding, {Size: 10 * time.Second, Buckets: 10}} {
			k := key(t, 100, spec)
			k.Name += "/" + spec.String()
			reseed := func(epoch, id uint64) store.Push {
				return store.Push{Gateway: 2, Epoch: epoch, Repair: &store.Repair{
					Reseed: []int64{at(500), at(3000)}, ReseedCounts: []int{2, 3}, ReseedID: id}}
			}
			for i, c := range []struct {
				p    store.Push
				want int
				why  string
			}{
				{reseed(4, 1), 5, "the re-seed"},
				{reseed(4, 1), 5, "the same re-seed again (its answer was lost)"},
				{reseed(4, 2), 10, "the gateway's next re-seed (the store lost the key again)"},
				{reseed(4, 1), 10, "an older re-seed, late"},
				{reseed(5, 1), 15, "the first re-seed of the gateway's next epoch"},
			} {
				if p := sync1(t, b, at(4000+int64(i)), k, c.p); p.Count != c.want {
					t.Fatalf("%v: count %d after %s, want %d", spec, p.Count, c.why, c.want)
				}
			}
		}
	}},
	{"outstanding slots and the key's life", func(t *testing.T, b store.Backend) {
		k := key(t, 10, sliding)
		p := sync1(t, b, at(0), k, store.Push{Gateway: 0, Ask: 4})
		if p.Granted != 4 || p.Outstanding != 4 {
			t.Fatalf("granted %d outstanding %d, want 4 and 4", p.Granted, p.Outstanding)
		}
		q := sync1(t, b, at(10), k, store.Push{Gateway: 1, Ask: 3})
		if q.Granted != 3 || q.Outstanding != 7 {
			t.Fatalf("granted %d outstanding %d, want 3 and 7", q.Granted, q.Outstanding)
		}
		a, err := b.Ask(ctx, at(20), k, 2, store.Query{Kind: store.QueryCentral, N: 1})
		if err != nil || q.Gen != p.Gen || a.Gen != p.Gen {
			t.Fatalf("the key's life changed while it was in use: %d, %d, %d (%v)", p.Gen, q.Gen, a.Gen, err)
		}
	}},
	{"spare: lent slots and the central check", func(t *testing.T, b store.Backend) {
		k := key(t, 10, sliding)
		spare := func(now int64, gw int) store.Answer {
			a, err := b.Ask(ctx, now, k, gw, store.Query{Kind: store.QueryCentral, N: 1, Spare: 3})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		for i := range 8 {
			if !spare(at(int64(i)), 0).Admit {
				t.Fatalf("central admit %d refused", i+1)
			}
		}
		// 8 admitted: a sync may lend up to L + 3 - 8 = 5 slots
		if p := sync1(t, b, at(10), k, store.Push{Gateway: 1, Ask: 7, Spare: 3, Rate: 1000}); p.Granted != 5 || p.Outstanding != 5 {
			t.Fatalf("spare grant %d (outstanding %d), want 5 of L + spare - count", p.Granted, p.Outstanding)
		}
		// the window has room for 2, but the slots fill L + spare: refused
		if a := spare(at(20), 2); a.Admit || a.Count != 8 {
			t.Fatalf("central check with the spare lent: %+v, want refused at count 8", a)
		}
		if ok, _, _ := central(b, at(21), k, 2, 1); ok {
			t.Fatal("a central check without a spare counted the lent slots as free")
		}
		// the slots come back: the window's own room decides again
		sync1(t, b, at(30), k, store.Push{Gateway: 1, Spare: 3})
		for i := range 2 {
			if a := spare(at(40+int64(i)), 2); !a.Admit || a.Count != 9+i {
				t.Fatalf("central check %d after the hand-back: %+v", i+1, a)
			}
		}
		if a := spare(at(50), 2); a.Admit {
			t.Fatalf("a central check past L admitted: %+v", a)
		}
		// without a spare, a sync lends nothing beyond L
		if p := sync1(t, b, at(60), k, store.Push{Gateway: 1, Ask: 3}); p.Granted != 0 {
			t.Fatalf("a grant without a spare at a full window: %d", p.Granted)
		}
	}},
	{"spare: a key refused for a full window is contended for a window or two", func(t *testing.T, b store.Backend) {
		k := key(t, 2, sliding) // spare 1: two refusals make the key contended
		q := store.Query{Kind: store.QueryCentral, N: 1, Spare: 1}
		for i := range 4 {
			a, err := b.Ask(ctx, at(int64(100*i)), k, 0, q)
			if err != nil || a.Admit != (i < 2) {
				t.Fatalf("central check %d: %+v (%v)", i+1, a, err)
			}
		}
		// the admits have left the window, but the refusals of the epoch
		// before still count: no slot lent, none even within L
		if p := sync1(t, b, at(10_500), k, store.Push{Gateway: 1, Ask: 1, Spare: 1, Rate: 500}); p.Granted != 0 {
			t.Fatalf("a contended key lent %d slots", p.Granted)
		}
		if g, err := b.Ask(ctx, at(10_600), k, 1, store.Query{Kind: store.QueryGrant, N: 1, Spare: 1}); err != nil || g.Granted != 0 {
			t.Fatalf("a contended key granted %d slots on a round trip (%v)", g.Granted, err)
		}
		if g, _ := grant(b, at(10_700), k, 2, 1); g != 1 {
			t.Fatalf("a grant without a spare on a contended key: %d, want 1 (the limit's room)", g)
		}
		// two epochs on, the key is calm again
		if p := sync1(t, b, at(20_500), k, store.Push{Gateway: 1, Ask: 2, Spare: 1, Rate: 500}); p.Granted != 2 {
			t.Fatalf("a calm key lent %d slots, want 2 (L + spare less gateway 2's slot)", p.Granted)
		}
	}},
	{"a central admit tops up lease slots within the limit", func(t *testing.T, b store.Backend) {
		k := key(t, 10, sliding)
		ask := func(now int64, gw int, topUp int16) store.Answer {
			a, err := b.Ask(ctx, now, k, gw, store.Query{Kind: store.QueryCentral, N: 1, Spare: 2, TopUp: topUp})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		if a := ask(at(0), 0, 3); !a.Admit || a.Count != 1 || a.Granted != 3 {
			t.Fatalf("a central admit with a top-up of 3: %+v, want admitted at 1 with 3 slots", a)
		}
		for i := range 5 {
			ask(at(1+int64(i)), 1, 0)
		}
		// 6 admitted, 3 out: one slot of the limit is left, not the spare
		if a := ask(at(10), 1, 4); !a.Admit || a.Count != 7 || a.Granted != 0 {
			t.Fatalf("a top-up past the limit's room: %+v, want admitted with none (6 + 3 out + 1 = L)", a)
		}
		if p := sync1(t, b, at(20), k, store.Push{Gateway: 2}); p.Outstanding != 3 {
			t.Fatalf("outstanding %d, want gateway 0's 3", p.Outstanding)
		}
		sync1(t, b, at(30), k, store.Push{Gateway: 0}) // hands them back
		if a := ask(at(40), 2, 5); !a.Admit || a.Granted != 2 {
			t.Fatalf("a top-up with 8 admitted: %+v, want 2 slots (L − 8)", a)
		}
		// 8 admitted and 2 out: the spare admits two more, with no slot
		for i := range 2 {
			if a := ask(at(50+int64(i)), 2, 5); !a.Admit || a.Count != 9+i || a.Granted != 0 {
				t.Fatalf("admit %d within the spare: %+v, want admitted at %d with no slot", i+1, a, 9+i)
			}
		}
		if a := ask(at(60), 2, 5); a.Admit || a.Granted != 0 {
			t.Fatalf("a refused central check topped up: %+v", a)
		}
		// three more refusals for a full window: 4 = 2 x spare, contended;
		// once the window has room again, an admit tops up nothing
		for i := range 3 {
			ask(at(61+int64(i)), 2, 0)
		}
		if a := ask(at(10_100), 2, 5); !a.Admit || a.Granted != 0 {
			t.Fatalf("a top-up on a contended key: %+v, want admitted with none", a)
		}
	}},
	{"a top-up with a spare leaves the slots worth more to others", func(t *testing.T, b store.Backend) {
		k := key(t, 10, sliding)
		for i := range 8 {
			central(b, at(int64(i)), k, 2, 1)
		}
		sync1(t, b, at(10), k, store.Push{Gateway: 0, Spare: 2, Rate: 100}) // asks nothing: only its rate
		// 8 admitted: gateway 1 gets 4 of the 6 it asks, and lacks 2
		if p := sync1(t, b, at(20), k, store.Push{Gateway: 1, Ask: 6, Spare: 2, Rate: 3000}); p.Granted != 4 {
			t.Fatalf("granted %d, want 4 (L + spare − 8)", p.Granted)
		}
		// the admits leave the window: 5 of the limit free after gateway
		// 0's admit, but gateway 1's 5th and 6th slots (a chance of 0.18
		// and 0.08 to be used) are worth more than gateway 0's 4th and 5th
		// (under 0.0001): 3
		a, err := b.Ask(ctx, at(10_600), k, 0, store.Query{Kind: store.QueryCentral, N: 1, Spare: 2, TopUp: 5})
		if err != nil || !a.Admit || a.Granted != 3 {
			t.Fatalf("a ranked top-up: %+v (%v), want admitted with 3 slots", a, err)
		}
	}},
	{"spare: refusals a sync reports mark the key contended", func(t *testing.T, b store.Backend) {
		k := key(t, 4, sliding) // spare 2: four refusals make the key contended
		if p := sync1(t, b, at(0), k, store.Push{Gateway: 0, Ask: 2, Spare: 2, Rate: 500, Refused: 3}); p.Granted != 2 {
			t.Fatalf("three refusals reported: %d slots, want 2 (not yet contended)", p.Granted)
		}
		if p := sync1(t, b, at(10), k, store.Push{Gateway: 1, Ask: 2, Spare: 2, Rate: 500, Refused: 1}); p.Granted != 0 {
			t.Fatalf("the fourth refusal reported with the ask: %d slots lent, want none", p.Granted)
		}
		if p := sync1(t, b, at(20), k, store.Push{Gateway: 2, Ask: 1, Refused: 9}); p.Granted != 1 {
			t.Fatalf("a sync without a spare: %d, want 1 (the limit's room; its refusals do not count)", p.Granted)
		}
		// two epochs on, calm again
		if p := sync1(t, b, at(20_500), k, store.Push{Gateway: 1, Ask: 2, Spare: 2, Rate: 500}); p.Granted != 2 {
			t.Fatalf("a calm key lent %d slots, want 2", p.Granted)
		}
	}},
	{"spare: a grant leaves the slots worth more to others", func(t *testing.T, b store.Backend) {
		k := key(t, 4, sliding) // spare 2: six slots in all
		push := func(now int64, gw, ask, rate int) store.Pull {
			return sync1(t, b, now, k, store.Push{Gateway: gw, Ask: ask, Spare: 2, Rate: rate})
		}
		if p := push(at(0), 0, 5, 100); p.Granted != 5 {
			t.Fatalf("a quiet gateway alone: %d, want 5", p.Granted)
		}
		if p := push(at(10), 1, 3, 2000); p.Granted != 1 {
			t.Fatalf("a busy gateway beside it: %d, want the 1 left", p.Granted)
		}
		// the quiet gateway's next slots (a chance of 0.095, 0.0047, ...
		// to be used in an interval) are worth less than the two the busy
		// one lacks (0.59, 0.32): of 5 free it gets 3
		if p := push(at(20), 0, 5, 100); p.Granted != 3 {
			t.Fatalf("the quiet gateway again: %d, want 3 (5 free less the busy one's 2 lacking)", p.Granted)
		}
		if p := push(at(30), 1, 3, 2000); p.Granted != 3 {
			t.Fatalf("the busy gateway again: %d, want its 3", p.Granted)
		}
	}},
	{"keys are apart", func(t *testing.T, b store.Backend) {
		a, c := key(t, 1, sliding), key(t, 1, sliding)
		c.Name += "/other"
		if ok, _, _ := central(b, at(0), a, 0, 1); !ok {
			t.Fatal("first key refused")
		}
		if ok, _, _ := central(b, at(0), c, 0, 1); !ok {
			t.Fatal("second key refused: keys share state")
		}
	}},
}

func rel(ts []int64) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("+%dms", (t-T0)/ms)
	}
	return out
}
