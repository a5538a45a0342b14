package sim_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
)

// Every design's Caveat, the warning the limiter logs when it runs one,
// quotes the simulator's figures for the run it names: they are recomputed
// here, so that the warning cannot drift from the design.
func TestCaveatsQuoteTheSimulator(t *testing.T) {
	re := regexp.MustCompile(`admitted_x ([0-9.]+), worst window ([0-9.]+) × L at K = 8, Δ = 1 s, flood:100 \(fleetlimit sim --design (\S+) --gateways 8 --sync 1s --traffic flood:100 --duration 20m\)`)
	p := sim.Defaults()
	p.Gateways, p.Sync, p.Duration = 8, time.Second, 20*time.Minute
	p.Traffic = sim.Traffic{Kind: sim.Flood, Factor: 100}
	rq, err := sim.DrawRequests(p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range design.Names() {
		info, _ := design.Lookup(name)
		if info.Caveat == "" {
			continue
		}
		n++
		m := re.FindStringSubmatch(info.Caveat)
		if m == nil || m[3] != name {
			t.Errorf("%s: caveat %q does not name its run as the others do", name, info.Caveat)
			continue
		}
		p.Design = name
		r, err := sim.RunRequests(p, rq)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%.3f %.3f", r.AdmittedX, r.WorstWindowX); got != m[1]+" "+m[2] {
			t.Errorf("%s: the simulator says admitted_x, worst window %s; the caveat says %s %s", name, got, m[1], m[2])
		}
	}
	if n < 3 {
		t.Fatalf("%d designs carry a caveat, want shared-counter, extrapolate and track-share at least", n)
	}
}
