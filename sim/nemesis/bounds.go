package nemesis

import (
	"fmt"
	"math"
	"strings"
)

// Bound is one design's stated bound on the admits any window holds, on a
// fault-free run: the table docs/design.md states and the checker holds.
type Bound struct {
	Design string
	// Formula is the bound as docs/design.md writes it.
	Formula string
	// limit is the bound for L and K; h gives the run's observed figures
	// a bound may name (headroom's budgets).
	limit func(l, k int, h *history) int
	// storeDecides is true for a design whose store decides or grants
	// every admit past a gateway's local budget; a restart then loses
	// only the admits its gateway had not pushed. For the others (the
	// counters decide from the gateway's view, which a new life starts
	// empty; split never reads the store) it loses every admit of the
	// gateway's window.
	storeDecides bool
	// quietSyncs is true for a design whose syncs push nothing
	// (central-counter): only its queries tell the store what it has to.
	quietSyncs bool
	// freePerLife is what a new life of a gateway may admit before it
	// heard anything (headroom: a key's free first request)
	freePerLife int
}

// Bounds are the live designs' bounds, in Designs' order but for the
// counters, which share one.
var Bounds = []Bound{
	{"permit", "L + ⌊0.1 L⌋", func(l, _ int, _ *history) int { return l + int(math.Floor(0.1*float64(l))) }, true, false, 0},
	{"central-counter", "L (fixed windows)", func(l, _ int, _ *history) int { return l }, true, true, 0},
	{"central-log", "L", func(l, _ int, _ *history) int { return l }, true, false, 0},
	{"extrapolate", "K × L", func(l, k int, _ *history) int { return k * l }, false, false, 0},
	{"headroom", "L + Σ_j B_j (B_j: the most gateway j admitted alone between two of its pulls)", func(l, _ int, h *history) int { return l + h.budgets() }, true, false, 1},
	{"lease", "L", func(l, _ int, _ *history) int { return l }, true, false, 0},
	{"lease-ask", "L", func(l, _ int, _ *history) int { return l }, true, false, 0},
	{"shared-counter", "K × L", func(l, k int, _ *history) int { return k * l }, false, false, 0},
	{"split", "K × ⌈L/K⌉", func(l, k int, _ *history) int { return k * ((l + k - 1) / k) }, false, false, 0},
	{"track-share", "K × L", func(l, k int, _ *history) int { return k * l }, false, false, 0},
}

// Terms are what each fault adds to a window's bound, while the window
// meets the fault's span: the terms docs/design.md derives.
var Terms = []struct{ Fault, Adds, Span string }{
	{"store down from t0 to t1 (`--outage`)", "K − 1 + U + B: U the mean over the gateways of the window's admits each had not heard of at its last contact before t0 (made before t0 and neither decided by the store nor pushed by then, or, after t0, spent by another gateway from slots it held; none for a gateway that restarted since); B the window's admits made from t1 until every gateway's fallback admits reached the store", "t0 until every fallback admit reached the store"},
	{"store forgets everything at f (`--forget`)", "K + the window's admits from f until each gateway that admitted in the window before f found the loss and pushed its history again + the window's admits of gateway lives that ended before they pushed it again (a restarted gateway's history starts with its new life)", "f until then"},
	{"gateway g restarts without its state at r (`--restart`)", "the window's admits of g the store did not hold at r (the counters and split: every admit of g, as a new life decides from an empty view), and headroom's free first request of the new life", "r to r + W"},
	{"round trips that take time and vary, lost syncs, skewed clocks (`--rtt`, `--rtt-p99`, `--sync-loss`, `--clock-skew`)", "the window's admits stamped in its first 2 S + D (a fixed window: and in its last): S the skew, D the longest a store call took from its gateway's clock reading to its answer. A store trims its window by the latest clock it has seen, so a call that read its clock earlier (late, or behind) counts a window the store has already trimmed; the windows are counted on the stamps the store compares, and a fault's span widens by 2 S", "every window"},
}

// boundOf returns design's Bound.
func boundOf(design string) (Bound, error) {
	for _, b := range Bounds {
		if b.Design == design {
			return b, nil
		}
	}
	return Bound{}, fmt.Errorf("nemesis: no stated bound for design %q", design)
}

// Markdown is the bounds and the fault terms as docs/nemesis.md tables
// them.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| design | a window holds at most |\n|---|---|\n")
	for _, x := range Bounds {
		fmt.Fprintf(&b, "| %s | %s |\n", x.Design, x.Formula)
	}
	b.WriteString("\n| fault | adds to a window's bound | while the window meets |\n|---|---|---|\n")
	for _, t := range Terms {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Fault, t.Adds, t.Span)
	}
	return b.String()
}
