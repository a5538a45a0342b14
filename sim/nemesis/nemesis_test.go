package nemesis

import (
	"os"
	"strings"
	"testing"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/store"
)

// suiteSeeds is how many seeds the suite checks (the command checks
// thousands: docs/nemesis.md).
func suiteSeeds() int {
	if raceEnabled {
		return 60
	}
	return 300
}

// Every live design holds its bounds on the suite's seeds, and the seeds
// deal every design and every kind of fault, so that the sweep cannot
// pass by drawing nothing.
func TestSeedsHoldTheirBounds(t *testing.T) {
	t.Parallel()
	rep, err := Sweep(Options{Seed: 1, Seeds: suiteSeeds()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Errorf("seed %d, %s: %v\n  fewest faults: fleetlimit sim %s\n  again: %s", f.Seed, f.Params.Design, f.Violation, f.Minimal, f.Command())
	}
	for _, d := range Designs() {
		if rep.Runs[d] == 0 {
			t.Errorf("no case drew %s", d)
		}
	}
	kinds := map[string]int{}
	for s := uint64(1); s <= uint64(suiteSeeds()); s++ {
		f := Draw(s, nil).Faults
		for kind, on := range map[string]bool{"outage": len(f.Outages) > 0, "forget": len(f.Forgets) > 0, "restart": len(f.Restarts) > 0,
			"rtt": f.RTT > 0, "rtt-p99": f.RTTP99 > 0, "loss": f.Loss > 0, "skew": f.Skew > 0} {
			if on {
				kinds[kind]++
			}
		}
	}
	if len(kinds) != 7 {
		t.Errorf("the seeds dealt only %v", kinds)
	}
}

// The seeds that found a bug while the nemesis was built, each with the
// design it deals (Draw's grid is part of a seed: a change to it re-deals
// them, and this test says so rather than testing something else).
var regressions = []struct {
	seed   uint64
	design string
	found  string
}{
	{141, "central-counter", "the fallback's admits never reached the store's counter: 2 L in one window after an outage"},
	{354, "central-counter", "the same, with eight gateways"},
	{42, "central-counter", "a counter the store lost started again from 0: 2 L in one window"},
	{92, "central-counter", "the same, with four gateways"},
	{482, "lease", "a window after its last pull, the fallback still subtracted its used slots, which had left the window"},
	{153, "permit", "a new life's fallback ignored the count its central answers told it"},
	{5926, "lease-ask", "a pull that waited behind round trips, applied after fresher central answers, set the fallback's count back"},
	{13393, "lease-ask", "after the store lost the key, the slots' cap left out the slots outstanding fleet-wide"},
}

func TestRegressionSeeds(t *testing.T) {
	t.Parallel()
	for _, r := range regressions {
		p := Draw(r.seed, nil)
		if p.Design != r.design {
			t.Fatalf("seed %d deals %s now, not %s: Draw's grid changed; find the case again (%s)", r.seed, p.Design, r.design, r.found)
		}
		if v, _, err := Check(p); err != nil || v != nil {
			t.Errorf("seed %d (%s: %s): %v %v", r.seed, r.design, r.found, v, err)
		}
	}
}

// plantedName is a lease-ask whose fallback starts from a fresh quota,
// ceil(L/K) a window, whatever count it heard: the bug the remembering
// fallback fixed (docs/design.md, "The live limiter").
const plantedName = "nemesis-planted-fresh-fallback"

func init() {
	base, err := catalog.Lookup("lease-ask")
	if err != nil {
		panic(err)
	}
	base.Name, base.Summary = plantedName, "lease-ask with a fallback from a fresh quota (a planted bug)"
	inner := base.New
	base.New = func(c design.Config) design.Gateway {
		return &freshFallback{Gateway: inner(c), quota: (c.Limit + c.Gateways - 1) / c.Gateways, w: int64(c.Window.Size)}
	}
	if err := catalog.Register(base); err != nil {
		panic(err)
	}
}

// freshFallback is the planted bug.
type freshFallback struct {
	design.Gateway
	quota  int
	w      int64
	admits []int64
}

func (f *freshFallback) Fallback(now int64, n int) design.Verdict {
	if f.Gateway.Fallback(now, n) == design.Admit {
		return design.Admit
	}
	for len(f.admits) > 0 && f.admits[0] <= now-f.w {
		f.admits = f.admits[1:]
	}
	if len(f.admits)+n > f.quota {
		return design.Reject
	}
	for range n {
		f.admits = append(f.admits, now)
	}
	return design.Admit
}

func (f *freshFallback) Abandon(now int64, n int, q store.Query, fallback bool) design.Verdict {
	if f.Gateway.Abandon(now, n, q, false) == design.Admit || !fallback {
		return design.Reject
	}
	return f.Fallback(now, n)
}

// The planted bug is caught within the suite's seeds, held to lease-ask's
// bound, and its failure shrinks to a schedule that still fails.
func TestPlantedFallbackIsCaught(t *testing.T) {
	t.Parallel()
	b, _ := boundOf("lease-ask")
	caught := 0
	for s := uint64(1); s <= uint64(suiteSeeds()) && caught == 0; s++ {
		p := Draw(s, []string{plantedName})
		v, _, err := checkAs(p, b)
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			continue
		}
		caught++
		t.Logf("seed %d caught it: %v", s, v)
		m := shrinkAs(p, b)
		if v, _, _ := checkAs(m, b); v == nil {
			t.Errorf("seed %d: the shrunk case %v no longer fails", s, m)
		}
		if faults(m) > faults(p) {
			t.Errorf("seed %d: shrinking added faults: %v from %v", s, m, p)
		}
	}
	if caught == 0 {
		t.Fatalf("the planted fresh-quota fallback passed %d seeds", suiteSeeds())
	}
}

// faults counts p's faults as Shrink drops them.
func faults(p sim.Params) int { return len(drops(p)) }

// A case is a function of its seed, and a valid run.
func TestDrawIsItsSeeds(t *testing.T) {
	for s := uint64(1); s <= 500; s++ {
		p, q := Draw(s, nil), Draw(s, nil)
		if p.String() != q.String() {
			t.Fatalf("seed %d drew %v and %v", s, p, q)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("seed %d: %v", s, err)
		}
	}
	if Draw(1, nil).String() == Draw(2, nil).String() {
		t.Fatal("seeds 1 and 2 drew one case")
	}
}

// docs/nemesis.md tables the bounds the checker holds, from Markdown.
func TestDocsTableTheBounds(t *testing.T) {
	doc, err := os.ReadFile("../../docs/nemesis.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), Markdown()) {
		t.Fatalf("docs/nemesis.md lacks the bounds table; paste in:\n%s", Markdown())
	}
}

// Every live design has a stated bound, and every bound a live design.
func TestEveryDesignHasABound(t *testing.T) {
	for _, d := range Designs() {
		if _, err := boundOf(d); err != nil {
			t.Error(err)
		}
	}
	if len(Bounds) != len(Designs()) {
		t.Errorf("%d bounds for %d designs", len(Bounds), len(Designs()))
	}
}
