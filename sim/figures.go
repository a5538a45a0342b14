package sim

// Figures are what a run reports as multiples and shares, or their means
// over seeds.
type Figures struct {
	AdmittedX         float64
	WorstWindowX      float64
	WorstFixedWindowX float64
	RejectedPct       float64
	RoundTripPct      float64
	StrandedX         float64
}

// Figures returns r's figures.
func (r Result) Figures() Figures {
	return Figures{r.AdmittedX, r.WorstWindowX, r.WorstFixedWindowX, r.RejectedPct, r.RoundTripPct, r.StrandedX}
}

// Add adds o to f, figure by figure.
func (f *Figures) Add(o Figures) {
	f.AdmittedX += o.AdmittedX
	f.WorstWindowX += o.WorstWindowX
	f.WorstFixedWindowX += o.WorstFixedWindowX
	f.RejectedPct += o.RejectedPct
	f.RoundTripPct += o.RoundTripPct
	f.StrandedX += o.StrandedX
}

// Div divides every figure of f by n.
func (f *Figures) Div(n float64) {
	f.AdmittedX /= n
	f.WorstWindowX /= n
	f.WorstFixedWindowX /= n
	f.RejectedPct /= n
	f.RoundTripPct /= n
	f.StrandedX /= n
}

// Mean returns the figures of results averaged over them: summed, then
// divided by their number.
func Mean(results []Result) Figures {
	var m Figures
	for _, r := range results {
		m.Add(r.Figures())
	}
	if len(results) > 0 {
		m.Div(float64(len(results)))
	}
	return m
}
