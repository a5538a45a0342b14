package replay

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/accesslog"
	"github.com/fleetlimit/fleetlimit/internal/workers"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// mixedLog is a CSV log of n keys over span: most keys seen once or twice
// (segments of one request), some in bursts, a few busy all along and one
// flooding past its limit, in time order.
func mixedLog(seed uint64, n int, span time.Duration) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC).UnixNano()
	type hit struct {
		t   int64
		key string
	}
	var hits []hit
	add := func(key string, t float64) {
		if t >= 0 && t < span.Seconds() {
			hits = append(hits, hit{start + int64(t*1e3)*1e6, key})
		}
	}
	for k := range n {
		key := fmt.Sprintf("k%d", k)
		switch {
		case k == 0: // a flood: 5 a second for ten minutes
			for t := 600.0; t < 1200; t += rng.ExpFloat64() / 5 {
				add(key, t)
			}
		case k < 4: // busy all along, below the limit
			for t := rng.Float64() * 10; t < span.Seconds(); t += rng.ExpFloat64() * 4 {
				add(key, t)
			}
		case k < 20: // bursts of a page view
			for b := 0; b < 5; b++ {
				at := rng.Float64() * span.Seconds()
				for range 1 + rng.IntN(30) {
					add(key, at+rng.Float64()*20)
				}
			}
		default: // seen once or twice
			add(key, rng.Float64()*span.Seconds())
			if rng.IntN(3) == 0 {
				add(key, rng.Float64()*span.Seconds())
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].t < hits[j].t })
	var b bytes.Buffer
	for _, h := range hits {
		fmt.Fprintf(&b, "%d.%03d,%s\n", h.t/1e9, h.t%1e9/1e6, h.key)
	}
	return b.Bytes()
}

// decisionsOf replays log by opt, telling every design's decisions of each
// segment, by key and start, and returns them with the report.
func decisionsOf(t *testing.T, log []byte, opt Options) (map[string][]bool, Report) {
	t.Helper()
	got := map[string][]bool{}
	opt.decided = func(key string, start int64, d string, admits []bool) {
		id := fmt.Sprintf("%s@%d/%s", key, start, d)
		if _, dup := got[id]; dup {
			t.Fatalf("segment %s decided twice", id)
		}
		got[id] = slices.Clone(admits)
	}
	r, err := accesslog.NewReader(bytes.NewReader(log), accesslog.Options{Format: accesslog.CSV})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(r, opt)
	if err != nil {
		t.Fatal(err)
	}
	return got, rep
}

// Replay's engine runs each segment only as far as its decisions need:
// no sync after its last request, the quiet syncs of sparse requests left
// out whatever the design, and one run for every segment of one request of
// a limit and gateway. Every design's every decision, and every figure of
// the report, must be those of the simulator run as it was before: every
// sync to the run's end, every segment run.
func TestEngineDecidesAsEverySync(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		seed   uint64
		keys   int
		span   time.Duration
		gws    int
		sync   time.Duration
		limit  Limit
		kind   window.Kind
		routes Routing
	}{
		{1, 300, 2 * time.Hour, 8, time.Second, Limit{100, time.Minute}, window.Sliding, Even},
		{2, 200, time.Hour, 4, 300 * time.Millisecond, Limit{20, time.Minute}, window.Sliding, Uneven},
		{3, 200, time.Hour, 16, 3 * time.Second, Limit{50, 10 * time.Second}, window.Fixed, StickyKey},
	} {
		log := mixedLog(c.seed, c.keys, c.span)
		designs := catalog.Sliding()
		if c.kind == window.Fixed {
			designs = catalog.Names()
		}
		opt := Options{Designs: designs, Gateways: c.gws, Sync: c.sync, Limit: c.limit, WindowKind: c.kind,
			Routing: c.routes, Seed: c.seed}
		now, nowRep := decisionsOf(t, log, opt)
		opt.everySync = true
		before, beforeRep := decisionsOf(t, log, opt)
		if len(now) != len(before) {
			t.Fatalf("seed %d: %d segments and designs decided, before %d", c.seed, len(now), len(before))
		}
		lone, rejected := 0, 0
		for id, want := range before {
			if !slices.Equal(now[id], want) {
				t.Fatalf("seed %d: %s decided %v, every sync %v", c.seed, id, now[id], want)
			}
			if len(want) == 1 {
				lone++
			}
			for _, a := range want {
				if !a {
					rejected++
				}
			}
		}
		if !reflect.DeepEqual(nowRep, beforeRep) {
			t.Fatalf("seed %d: reports differ:\n%+v\nevery sync:\n%+v", c.seed, nowRep, beforeRep)
		}
		if lone < len(before)/4 || rejected == 0 {
			t.Fatalf("seed %d: %d of %d segments of one request, %d rejections: the log tests too little", c.seed, lone, len(before), rejected)
		}
		t.Logf("seed %d: %d segment×design runs identical (%d of one request), %d rejections", c.seed, len(before), lone, rejected)
	}
}

// The report does not depend on how many workers run the segments.
func TestWorkersDoNotChangeTheReport(t *testing.T) {
	t.Parallel()
	log := mixedLog(4, 400, 2*time.Hour)
	var reports []Report
	var keys [][]string
	for _, w := range []int{1, 2, 5} {
		r, err := accesslog.NewReader(bytes.NewReader(log), accesslog.Options{Format: accesslog.CSV})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		rep, err := Run(r, Options{Designs: catalog.Sliding(), Gateways: 8, Sync: time.Second, Limit: Limit{100, time.Minute},
			Routing: Even, Seed: 4, Workers: w, Parallel: workers.Pool(w), OnKey: func(k KeyResult) { order = append(order, fmt.Sprint(k.Key, k.Start, k.Designs)) }})
		if err != nil {
			t.Fatal(err)
		}
		reports, keys = append(reports, rep), append(keys, order)
	}
	for i := 1; i < len(reports); i++ {
		if !reflect.DeepEqual(reports[i], reports[0]) || !slices.Equal(keys[i], keys[0]) {
			t.Fatalf("report with %d workers differs from one worker's", []int{1, 2, 5}[i])
		}
	}
}
