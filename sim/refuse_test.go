package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/window"
)

// TestRefusalsMatchPlain holds the eager mode's sure rejections, single and
// in bulk, to the plain path that asks the design for every request: every
// figure of the run, and, with a trace (which turns the bulk off), every
// decision.
func TestRefusalsMatchPlain(t *testing.T) {
	t.Parallel() // pure runs: the suite's sim step has two cores
	floods := []string{"flood:1.5", "flood:10", "flood:300", "steady:0.5,flood:100+5m", "flood:100~10s/50s"}
	ks := []int{1, 3, 8, 32}
	if raceEnabled {
		floods, ks = []string{"flood:10", "flood:30", "steady:0.5,flood:30+5m"}, []int{3, 8}
	}
	specs := []window.Spec{{Size: time.Minute}, {Size: time.Minute, Kind: window.Fixed}, {Size: time.Minute, Buckets: 60}}
	runs, bulked := 0, 0
	for _, name := range []string{"shared-counter", "extrapolate", "track-share", "split", "lease", "lease-ask", "headroom"} {
		for _, tr := range floods {
			for i, k := range ks {
				spec := specs[(i+len(tr))%len(specs)]
				p := Defaults()
				p.Design, p.Gateways, p.Sync, p.Duration, p.Seed = name, k, 300*time.Millisecond, 12*time.Minute, uint64(k)
				p.WindowKind, p.WindowBuckets, p.Routing = spec.Kind, spec.Buckets, Routing(k%2)
				p.AlignedSync = k == 8
				if tr == "flood:10" { // own admits leave the window before the next sync
					p.Window, p.Sync = 20*time.Second, 30*time.Second
				}
				p.Traffic, p.Also = mustMix(t, tr)
				plain := runMode(t, p, nil, modePlain)
				fast := runMode(t, p, nil, modeEager)
				if !reflect.DeepEqual(plain, fast) {
					t.Fatalf("%v:\nplain %+v\nfast  %+v", p, plain, fast)
				}
				var a, b []int64
				runMode(t, p, func(at int64, g int, v design.Verdict) { a = append(a, at<<8|int64(g)<<1|int64(v)) }, modePlain)
				runMode(t, p, func(at int64, g int, v design.Verdict) { b = append(b, at<<8|int64(g)<<1|int64(v)) }, modeEager)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("%v: the decisions differ", p)
				}
				runs++
				if r, _ := newRunner(p, nil, nil, nil); r.newRefusals() != nil && r.newRefusals().bulk {
					bulked++
				}
			}
		}
	}
	if bulked == 0 || bulked == runs {
		t.Fatalf("%d of %d runs counted in bulk: both paths must be tested", bulked, runs)
	}
	t.Logf("%d runs identical, %d of them in bulk", runs, bulked)
}

func runMode(t *testing.T, p Params, trace Trace, md mode) Result {
	t.Helper()
	r, _, err := run(p, trace, md)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
