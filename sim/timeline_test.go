package sim

import (
	"testing"
	"time"
)

// A timeline adds up to the run's own figures: its admits and rejections
// are the run's over the span, and the fleet's count in the window never
// passes the run's worst window; under shared-counter's flood every
// gateway admits before its first sync, which the timeline shows.
func TestTimelineAddsUp(t *testing.T) {
	p := Defaults()
	p.Design, p.Gateways, p.Traffic, p.Duration = "shared-counter", 8, Traffic{Kind: Flood, Factor: 100}, 3*time.Minute
	r, tl, err := RunTimeline(p, time.Second, p.Duration)
	if err != nil {
		t.Fatal(err)
	}
	admits, rejects, most := 0, 0, 0
	for b := range tl.Admits {
		for _, n := range tl.Admits[b] {
			admits += n
		}
		rejects += tl.Rejects[b]
		most = max(most, tl.InWindow[b])
	}
	if int64(admits+rejects) != r.Requests || int64(admits) != r.Admitted {
		t.Fatalf("timeline %d admits + %d rejections, run %d requests, %d admitted", admits, rejects, r.Requests, r.Admitted)
	}
	if float64(most) > r.WorstWindowX*float64(p.Limit)+1e-9 {
		t.Fatalf("timeline's most in a window %d over the run's worst window %.3f × L", most, r.WorstWindowX)
	}
	for g, n := range tl.Admits[0] {
		if n == 0 {
			t.Errorf("gateway %d admitted nothing in the first second of a flood (it knows of no admit before its first sync)", g)
		}
	}
	if _, _, err := RunTimeline(p, time.Millisecond, p.Duration); err == nil {
		t.Fatal("180,000 buckets accepted")
	}
}
