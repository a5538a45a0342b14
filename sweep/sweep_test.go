package sweep

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

func grid(t *testing.T) []sim.Params {
	var ps []sim.Params
	for _, name := range catalog.StudyDesigns {
		for _, tr := range []string{"steady:0.8", "pageload:0.8", "flood:30"} {
			for seed := uint64(1); seed <= 3; seed++ {
				p := sim.Defaults()
				p.Design, p.Gateways, p.Duration, p.Seed = name, 8, 10*time.Minute, seed
				p.Routing = sim.Uneven
				var err error
				if p.Traffic, err = sim.ParseTraffic(tr); err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// Check 5: the same parameters and seed give the same figures, whatever the
// number of workers.
func TestCheck5SameResultsAnyWorkers(t *testing.T) {
	ps := grid(t)
	want := Run(context.Background(), ps, Options{Workers: 1})
	for _, w := range []int{2, 3, 8} {
		got := Run(context.Background(), ps, Options{Workers: w})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d workers: results differ from one worker", w)
		}
	}
	for i, o := range want {
		if !o.Done || o.Err != nil || o.Result.Requests == 0 {
			t.Fatalf("run %d: %+v", i, o)
		}
	}
}

func TestCancelKeepsFinished(t *testing.T) {
	ps := grid(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	out := Run(ctx, ps, Options{Workers: 1, Progress: func(done, _ int) {
		n = done
		if done == 5 {
			cancel()
		}
	}})
	done := 0
	for _, o := range out {
		if o.Done {
			done++
		}
	}
	if done != 5 || n != 5 {
		t.Fatalf("after cancelling at 5: %d done, progress %d", done, n)
	}
}

// Runs that share their requests get exactly the results they get on their
// own.
func TestSharedRequestsEqualOwn(t *testing.T) {
	ps := grid(t)
	shared := 0
	for _, s := range share(ps, Twins(ps, Options{})) {
		if s != nil {
			shared++
		}
	}
	if shared != len(ps) {
		t.Fatalf("%d of %d runs share their requests; every design of a traffic and seed should", shared, len(ps))
	}
	got := Run(context.Background(), ps, Options{Workers: 2})
	for i, p := range ps {
		want, err := sim.Run(p)
		if err != nil {
			t.Fatal(err)
		}
		if !got[i].Done || got[i].Err != nil || !reflect.DeepEqual(got[i].Result, want) {
			t.Fatalf("%v: shared %+v, on its own %+v", p, got[i], want)
		}
	}
}

// Runs that share their requests start together, where the first of them
// would; the rest keep their order.
func TestStartOrderKeepsGroupsTogether(t *testing.T) {
	a := sim.Defaults()
	b := a
	b.Seed = 2
	c := a
	c.Faults.Members = []sim.MemberChange{{At: 30 * time.Minute, Gateways: 9}} // draws its own
	a2, b2 := a, b
	a2.Design, b2.Design = "lease", "lease"
	ps := []sim.Params{a, b, c, a2, b2}
	if got, want := startOrder(share(ps, Twins(ps, Options{})), Twins(ps, Options{})), []int{0, 3, 1, 4, 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("start order %v, want %v", got, want)
	}
}

// A run whose result cannot depend on its sync interval takes the result of
// the run just like it but for the interval, and gets exactly the result it
// gets on its own; the others, faulty central-log runs among them, run.
// Without store counts, central-log's runs take one result whatever their
// fleet, and split's whatever their interval, each the result it gets on
// its own but for its store counts.
func TestTwinsEqualOwn(t *testing.T) {
	var ps []sim.Params
	for _, d := range []string{"central-log", "split", "shared-counter"} {
		for _, tr := range []string{"steady:1", "flood:30"} {
			for _, rtt := range []time.Duration{0, 5 * time.Millisecond} {
				for i, sync := range []time.Duration{100 * time.Millisecond, time.Second, 3 * time.Second} {
					p := sim.Defaults()
					p.Design, p.Sync, p.Duration = d, sync, 10*time.Minute
					p.Traffic, _ = sim.ParseTraffic(tr)
					if d == "central-log" { // a fleet of its own at each interval
						p.Gateways, p.Routing = 4+i, sim.Routing(i%2)
					}
					p.Faults.RTT = rtt
					ps = append(ps, p)
				}
			}
		}
	}
	// with store counts, central-log's ideal runs take another's result
	// only at the same fleet, and no split run does; without them, the
	// last two of central-log's three ideal runs of each traffic and the
	// one added take the first's, and so do split's
	mustTwinAsOwn(t, ps, Options{Workers: 2}, 0)
	ps = append(ps, ps[0])
	ps[len(ps)-1].Sync = 2 * time.Second
	mustTwinAsOwn(t, ps, Options{Workers: 2}, 1)
	mustTwinAsOwn(t, ps, Options{Workers: 2, NoStoreCounts: true}, 9)
	// the same run twice runs once, store counts and all: a faulty
	// shared-counter run, which has no twin of any other kind
	ps = append(ps, ps[len(ps)-2])
	mustTwinAsOwn(t, ps, Options{Workers: 2}, 2)
	mustTwinAsOwn(t, ps, Options{Workers: 2, NoStoreCounts: true}, 10)
}

// mustTwinAsOwn fails unless a sweep of ps with opt takes want runs'
// results from another and gives every run the result it gets on its own
// (without its store counts when opt says so), reported once.
func mustTwinAsOwn(t *testing.T, ps []sim.Params, opt Options, want int) {
	t.Helper()
	copies := 0
	for _, j := range Twins(ps, opt) {
		if j >= 0 {
			copies++
		}
	}
	if copies != want {
		t.Fatalf("%d runs take another's result, want %d", copies, want)
	}
	reported := map[int]int{}
	opt.Progress = func(_, i int) { reported[i]++ }
	got := Run(context.Background(), ps, opt)
	for i, p := range ps {
		want, err := sim.Run(p)
		if err != nil {
			t.Fatal(err)
		}
		if opt.NoStoreCounts {
			want.Store = sim.StoreCounts{}
		}
		if !got[i].Done || got[i].Err != nil || !reflect.DeepEqual(got[i].Result, want) {
			t.Fatalf("%v: in the sweep %+v, on its own %+v", p, got[i], want)
		}
		if reported[i] != 1 {
			t.Fatalf("%v: reported %d times", p, reported[i])
		}
	}
}
