package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/window"
)

func mustTraffic(t testing.TB, s string) Traffic {
	t.Helper()
	tr, err := ParseTraffic(s)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// mustMix parses a traffic spec into a run's Traffic and Also.
func mustMix(t testing.TB, s string) (Traffic, []Traffic) {
	t.Helper()
	mix, err := ParseMix(s)
	if err != nil {
		t.Fatal(err)
	}
	return mix[0], mix[1:]
}

// decisions runs p and returns its decisions in order.
func decisions(t *testing.T, p Params) []design.Verdict {
	t.Helper()
	var ds []design.Verdict
	if _, err := RunTrace(p, func(_ int64, _ int, d design.Verdict) { ds = append(ds, d) }); err != nil {
		t.Fatal(err)
	}
	return ds
}

// Check 1: with K = 1, shared-counter, extrapolate and track-share make the
// central log's decisions, decision for decision, on the same arrivals.
func TestCheck1SingleGatewayIsCentralLog(t *testing.T) {
	for _, tr := range []string{"steady:1", "pageload:0.8", "flood:10", "flood:300"} {
		for _, sync := range []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second, 90 * time.Second} {
			for _, kind := range []window.Kind{window.Sliding, window.Fixed} {
				p := Defaults()
				p.Design, p.Gateways, p.Sync, p.WindowKind = "central-log", 1, sync, kind
				p.Traffic, p.Duration, p.Seed = mustTraffic(t, tr), 30*time.Minute, 7
				want := decisions(t, p)
				rejected := 0
				for _, d := range want {
					if d == design.Reject {
						rejected++
					}
				}
				if rejected == 0 && tr != "pageload:0.8" {
					t.Fatalf("%v: the central log rejected nothing; the comparison would prove little", p)
				}
				for _, name := range []string{"shared-counter", "extrapolate", "track-share"} {
					p.Design = name
					got := decisions(t, p)
					if len(got) != len(want) {
						t.Fatalf("%v: %d decisions, central log %d", p, len(got), len(want))
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%v: request %d %v, central log %v", p, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// The K = 1 comparison has power: with two gateways shared-counter does
// differ from the central log under a flood.
func TestCheck1HasPower(t *testing.T) {
	p := Defaults()
	p.Design, p.Gateways, p.Traffic, p.Duration = "central-log", 2, mustTraffic(t, "flood:30"), 10*time.Minute
	a := decisions(t, p)
	p.Design = "shared-counter"
	b := decisions(t, p)
	diff := 0
	for i := range a {
		if a[i] != b[i] {
			diff++
		}
	}
	if diff == 0 {
		t.Fatal("shared-counter with K = 2 made the central log's every decision")
	}
}

// erlangB is the Erlang loss formula: the share of offered load a erlangs
// lost on n servers, by the stable recurrence B(k) = aB(k-1) / (k + aB(k-1)).
func erlangB(n int, a float64) float64 {
	b := 1.0
	for k := 1; k <= n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

func TestErlangB(t *testing.T) {
	// Reference values of the loss formula.
	for _, c := range []struct {
		n    int
		a, b float64
	}{{1, 1, 0.5}, {2, 1, 0.2}, {100, 80, 0.0039920}, {100, 100, 0.0757005}} {
		if got := erlangB(c.n, c.a); math.Abs(got-c.b) > 1e-6 {
			t.Fatalf("B(%d, %g) = %g, want %g", c.n, c.a, got, c.b)
		}
	}
}

// Check 2: the central log under steady Poisson traffic rejects what Erlang
// B predicts for L servers and offered load F x L: an admit holds a slot for
// exactly W.
//
// Tolerance: each load runs n seeds of 300 simulated minutes (24,000 to
// 30,000 requests a seed). Rejections come in bursts, so rather than assume
// a binomial error the test measures the standard error of the mean over the
// seeds and allows four of them (a false alarm about once in 16,000). It also
// requires that standard error to be under 8% of the prediction, so that a
// model off by a third (say, slots held for 0.75 W) cannot pass: the
// prediction then moves by far more than the allowed band.
func TestCheck2CentralLogMatchesErlangB(t *testing.T) {
	seeds := 40
	if raceEnabled {
		seeds = 12
	}
	for _, c := range []struct {
		limit int
		f     float64
	}{{100, 0.8}, {100, 0.9}, {100, 1.0}, {20, 0.8}} {
		p := Defaults()
		p.Design, p.Gateways, p.Limit, p.Duration = "central-log", 4, c.limit, 300*time.Minute
		p.Traffic = Traffic{Kind: Steady, Factor: c.f}
		var sum, sumSq float64
		for s := 0; s < seeds; s++ {
			p.Seed = uint64(1000 + s)
			r, err := Run(p)
			if err != nil {
				t.Fatal(err)
			}
			x := r.RejectedPct / 100
			sum += x
			sumSq += x * x
		}
		n := float64(seeds)
		mean := sum / n
		se := math.Sqrt((sumSq/n - mean*mean) / (n - 1))
		want := erlangB(c.limit, c.f*float64(c.limit))
		t.Logf("L=%d F=%.1f: rejected %.4f%% ± %.4f%%, Erlang B %.4f%%", c.limit, c.f, 100*mean, 100*se, 100*want)
		if se > 0.08*want {
			t.Fatalf("L=%d F=%g: standard error %.4g is over 8%% of %.4g: too few seeds to tell", c.limit, c.f, se, want)
		}
		if math.Abs(mean-want) > 4*se {
			t.Fatalf("L=%d F=%g: rejected %.4f%%, Erlang B says %.4f%% (more than 4 standard errors of %.4f%%)", c.limit, c.f, 100*mean, 100*want, 100*se)
		}
	}
	// At F = 0.5 Erlang B is about 1.6e-8: nothing should be rejected.
	p := Defaults()
	p.Design, p.Duration, p.Traffic = "central-log", 300*time.Minute, Traffic{Kind: Steady, Factor: 0.5}
	if r, _ := Run(p); r.Rejected != 0 {
		t.Fatalf("F=0.5: %d rejected, Erlang B predicts none", r.Rejected)
	}
}

// Check 3: with aligned syncs and a fixed window, a heavy flood against
// shared-counter gets exactly K x L in every whole window.
func TestCheck3AlignedFixedFloodGetsKL(t *testing.T) {
	for _, k := range []int{1, 2, 4, 8} {
		p := Defaults()
		p.Design, p.Gateways, p.Sync, p.WindowKind, p.AlignedSync = "shared-counter", k, time.Second, window.Fixed, true
		p.Traffic, p.Duration = mustTraffic(t, "flood:4000"), 10*time.Minute
		w := int64(p.Window)
		perWindow := map[int64]int{}
		if _, err := RunTrace(p, func(at int64, _ int, d design.Verdict) {
			if d == design.Admit {
				perWindow[at/w]++
			}
		}); err != nil {
			t.Fatal(err)
		}
		whole := int64(p.Duration) / w
		for i := int64(0); i < whole; i++ {
			if perWindow[i] != k*p.Limit {
				t.Fatalf("K=%d: window %d admitted %d, want K x L = %d", k, i, perWindow[i], k*p.Limit)
			}
		}
	}
}

// Check 4: neither lease design ever has more than L admitted in any window
// of its kind, in any run.
func TestCheck4LeasesNeverExceedL(t *testing.T) {
	t.Parallel() // pure runs: the suite's sim step has two cores
	traffics := []string{"steady:0.5", "steady:0.8", "steady:1", "pageload:0.5", "pageload:0.8",
		"flood:1.5", "flood:3", "flood:10", "flood:30", "flood:100", "flood:300", "flood:1000"}
	ks := []int{2, 8, 32}
	syncs := []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second}
	seeds := 2
	duration := 10 * time.Minute
	if raceEnabled {
		ks, syncs, seeds, duration = []int{2, 32}, []time.Duration{100 * time.Millisecond, 10 * time.Second}, 1, 5*time.Minute
	}
	runs := 0
	for _, name := range []string{"lease", "lease-ask"} {
		for _, tr := range traffics {
			for _, k := range ks {
				for _, sync := range syncs {
					for _, routing := range []Routing{Even, Uneven} {
						for _, kind := range []window.Kind{window.Sliding, window.Fixed} {
							for s := 0; s < seeds; s++ {
								p := Defaults()
								p.Design, p.Gateways, p.Sync, p.Routing, p.WindowKind = name, k, sync, routing, kind
								p.Traffic, p.Duration, p.Seed = mustTraffic(t, tr), duration, uint64(s+1)
								r, err := Run(p)
								if err != nil {
									t.Fatal(err)
								}
								runs++
								worst := r.WorstWindowX
								if kind == window.Fixed {
									worst = r.WorstFixedWindowX
								}
								if worst > 1 {
									t.Fatalf("%v: %g x L in one window", p, worst)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d lease runs, none over L", runs)
}

func ExampleRun() {
	p := Defaults()
	p.Design = "lease"
	p.Gateways = 8
	p.Traffic = Traffic{Kind: Flood, Factor: 100}
	p.Duration = 20 * time.Minute
	r, err := Run(p)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d requests, worst window %.2f x L\n", p.Design, r.Requests, r.WorstWindowX)
	// Output: lease: 199366 requests, worst window 1.00 x L
}
