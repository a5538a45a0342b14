package sim

// Figures are what a run reports as multiples and shares, or their means
// over seeds.
type Figures struct {
	// AdmittedX is admitted requests per window after the first window,
	// as a multiple of L (per minute, for the study's 1-minute window).
	AdmittedX float64
	// WorstWindowX is the most admitted in any W-long interval, over L.
	WorstWindowX float64
	// WorstFixedWindowX is the most admitted in any fixed window
	// [nW, (n+1)W), over L.
	WorstFixedWindowX float64
	// RejectedPct is the share of requests rejected, in percent (the
	// honest client's cost in honest runs, the attacker's in floods).
	RejectedPct float64
	// RoundTripPct is the share of requests that waited on the store.
	RoundTripPct float64
	// StrandedX is the time-averaged lease slots granted and not used,
	// fleet-wide, over L (0 outside the lease designs).
	StrandedX float64
	// AttackWindowX, in a run where a flood starts late, is the most
	// admits, × L, of a window (t-W, t] that holds the flood's start: its
	// first window, the admits before it included (0 otherwise).
	AttackWindowX float64 `json:",omitempty"`
	// FirstBeforePct and FirstAfterPct, in a run of several traffics or a
	// late flood, are the first traffic's (the honest client's) rejected
	// share before the flood starts and from then on, in percent (0
	// otherwise, and 0 before when nothing starts late).
	FirstBeforePct float64 `json:",omitempty"`
	FirstAfterPct  float64 `json:",omitempty"`
}

// Add adds o to f, figure by figure.
func (f *Figures) Add(o Figures) {
	f.AdmittedX += o.AdmittedX
	f.WorstWindowX += o.WorstWindowX
	f.WorstFixedWindowX += o.WorstFixedWindowX
	f.RejectedPct += o.RejectedPct
	f.RoundTripPct += o.RoundTripPct
	f.StrandedX += o.StrandedX
	f.AttackWindowX += o.AttackWindowX
	f.FirstBeforePct += o.FirstBeforePct
	f.FirstAfterPct += o.FirstAfterPct
}

// Div divides every figure of f by n.
func (f *Figures) Div(n float64) {
	f.AdmittedX /= n
	f.WorstWindowX /= n
	f.WorstFixedWindowX /= n
	f.RejectedPct /= n
	f.RoundTripPct /= n
	f.StrandedX /= n
	f.AttackWindowX /= n
	f.FirstBeforePct /= n
	f.FirstAfterPct /= n
}

// Mean returns the figures of results averaged over them: summed, then
// divided by their number.
func Mean(results []Result) Figures {
	var m Figures
	for _, r := range results {
		m.Add(r.Figures)
	}
	if len(results) > 0 {
		m.Div(float64(len(results)))
	}
	return m
}
