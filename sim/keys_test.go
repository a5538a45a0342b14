package sim

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestParseKeyDist(t *testing.T) {
	for s, want := range map[string]float64{"uniform": 0, "zipf:1.1": 1.1, "zipf:10": 10} {
		d, err := ParseKeyDist(s)
		if err != nil || d.Zipf != want || d.String() != s {
			t.Fatalf("%q: %+v %v", s, d, err)
		}
	}
	for _, s := range []string{"", "zipf", "zipf:0", "zipf:-1", "zipf:11", "zipf:NaN", "zipf:x", "pareto:1"} {
		if _, err := ParseKeyDist(s); err == nil {
			t.Fatalf("%q accepted", s)
		}
	}
	w := KeyDist{Zipf: 1}.Weights(4) // 1, 1/2, 1/3, 1/4 over 25/12
	for i, x := range []float64{12.0 / 25, 6.0 / 25, 4.0 / 25, 3.0 / 25} {
		if math.Abs(w[i]-x) > 1e-12 {
			t.Fatalf("zipf:1 weights %v", w)
		}
	}
}

// One key is a run of its own: RunKeys with N = 1 reports what Run reports
// for that key's seed, every sync performed.
func TestOneKeyIsOneRun(t *testing.T) {
	p := Defaults()
	p.Design, p.Duration, p.Seed = "headroom", 20*time.Minute, 3
	kr, err := RunKeys(p, 1, KeyDist{})
	if err != nil {
		t.Fatal(err)
	}
	q := p
	q.Seed = p.Seed * MaxKeys
	r, _, err := run(q, nil, modeEager)
	if err != nil {
		t.Fatal(err)
	}
	if kr.Requests != r.Requests || kr.Admitted != r.Admitted || kr.RoundTrips != r.RoundTrips || kr.WorstWindowX != r.WorstWindowX {
		t.Fatalf("keys %+v, run %+v", kr, r)
	}
	if got := kr.Store.SyncItemsPerSec; got != float64(p.Gateways)/p.Sync.Seconds() {
		t.Fatalf("%v key syncs a second, want K/Δ = %d", got, p.Gateways)
	}
}

// N keys carry N times one key's traffic, each admit is pushed at most once
// (and all but the last interval's are), and a run is reproducible.
func TestManyKeysCarry(t *testing.T) {
	p := Defaults()
	p.Design, p.Duration, p.Traffic = "shared-counter", 30*time.Minute, Traffic{Kind: Steady, Factor: 0.5}
	const n = 50
	a, err := RunKeys(p, n, KeyDist{Zipf: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RunKeys(p, n, KeyDist{Zipf: 1.1})
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs differ:\n%+v\n%+v", a, b)
	}
	want := float64(n) * 0.5 * float64(p.Limit) * p.Duration.Minutes()
	if got := float64(a.Requests); math.Abs(got-want) > 4*math.Sqrt(want) {
		t.Fatalf("%v requests, want about %v", got, want)
	}
	secs := p.Duration.Seconds()
	pushed := a.Store.PushedPerSync * a.Store.BatchesPerSec * secs
	if pushed > float64(a.Admitted)+0.5 || pushed < float64(a.Admitted)-float64(n*p.Gateways) {
		t.Fatalf("%v stamps pushed for %d admits", pushed, a.Admitted)
	}
	if a.Store.SyncItemsPerSec != float64(n*p.Gateways)/p.Sync.Seconds() {
		t.Fatalf("%v key syncs a second", a.Store.SyncItemsPerSec)
	}
	// zipf:1.1 over 50 keys sends a fifth of the traffic to the first:
	// about 5 x L, over its limit, while the uniform spread stays under.
	u, _ := RunKeys(p, n, KeyDist{})
	if a.WorstWindowX <= 1 || u.WorstWindowX > 1.05 || a.RejectedPct <= u.RejectedPct {
		t.Fatalf("zipf %+v, uniform %+v", a, u)
	}
	if _, err := RunKeys(p, 0, KeyDist{}); err == nil {
		t.Fatal("0 keys accepted")
	}
}
