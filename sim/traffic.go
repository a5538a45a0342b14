package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// TrafficKind is one of the study's traffic models.
type TrafficKind uint8

const (
	// Steady is one honest client with Poisson arrivals at F x L / W.
	Steady TrafficKind = iota + 1
	// PageLoad is honest page loads: Poisson loads, each a burst of
	// PageLoadBurst requests spread uniformly over PageLoadSpread, at a
	// mean request rate of F x L / W.
	PageLoad
	// Flood is an attacker: Poisson arrivals at M x L / W.
	Flood
)

// PageLoadBurst is the number of requests in one page load.
const PageLoadBurst = 10

// PageLoadSpread is the time over which a page load's requests arrive (ns).
const PageLoadSpread = int64(1e9)

// MaxFactor is the largest traffic factor a run takes.
const MaxFactor = 1e9

// Traffic is a traffic model and its factor (F for honest traffic, M for
// floods), and the shape of its arrivals in time and over the gateways.
// The zero shape is the study's: from the start, all along, routed by the
// run's Routing.
type Traffic struct {
	Kind   TrafficKind
	Factor float64
	// Target, when not 0, sends this traffic to Target of the K gateways
	// only, chosen from the seed, evenly among them: an attacker who picks
	// its gateways.
	Target int
	// Start is when it begins (a sudden flood on a key that had only
	// honest traffic, say); nothing arrives before.
	Start time.Duration
	// On and Off, when On is not 0, pulse it: on for On at the factor's
	// rate, then off for Off, over and over.
	On, Off time.Duration
}

// String returns the spec form, e.g. "steady:0.8" or "flood:100@1+10m~5s/55s".
func (t Traffic) String() string {
	name := map[TrafficKind]string{Steady: "steady", PageLoad: "pageload", Flood: "flood"}[t.Kind]
	s := name + ":" + strconv.FormatFloat(t.Factor, 'g', -1, 64)
	if t.Target > 0 {
		s += "@" + strconv.Itoa(t.Target)
	}
	if t.Start > 0 {
		s += "+" + t.Start.String()
	}
	if t.On > 0 {
		s += "~" + t.On.String() + "/" + t.Off.String()
	}
	return s
}

// share is the fraction of time it is on.
func (t Traffic) share() float64 {
	if t.On == 0 {
		return 1
	}
	return float64(t.On) / float64(t.On+t.Off)
}

// ParseMix parses one traffic or several joined by commas, which arrive
// together on the key: "steady:0.8,flood:100@1+10m".
func ParseMix(s string) ([]Traffic, error) {
	var out []Traffic
	for _, part := range strings.Split(s, ",") {
		t, err := ParseTraffic(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ParseTraffic parses one traffic: steady:F, pageload:F or flood:M, then
// optionally @N (to N gateways), +T (starting at T) and ~ON/OFF (pulsed),
// in that order.
func ParseTraffic(s string) (Traffic, error) {
	const want = "want steady:F, pageload:F or flood:M with a positive number, then optionally @N (N gateways), +T (from time T), ~ON/OFF (pulsed), e.g. steady:0.8, flood:100@1+10m or flood:1000~5s/55s"
	spec, pulse, pulsed := strings.Cut(s, "~")
	spec, start, started := strings.Cut(spec, "+")
	spec, target, targeted := strings.Cut(spec, "@")
	name, num, ok := strings.Cut(spec, ":")
	if !ok {
		return Traffic{}, fmt.Errorf("traffic %q: %s", s, want)
	}
	var t Traffic
	switch name {
	case "steady":
		t.Kind = Steady
	case "pageload":
		t.Kind = PageLoad
	case "flood":
		t.Kind = Flood
	default:
		return Traffic{}, fmt.Errorf("traffic %q: unknown model %q; %s", s, name, want)
	}
	f, err := strconv.ParseFloat(num, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), !(f > 0):
		return Traffic{}, fmt.Errorf("traffic %q: factor %q is not a positive number; %s", s, num, want)
	case f > MaxFactor:
		return Traffic{}, fmt.Errorf("traffic %q: factor %q is over %g, the most the simulator takes (a flood of %g × L a window)", s, num, float64(MaxFactor), float64(MaxFactor))
	}
	t.Factor = f
	if targeted {
		if t.Target, err = strconv.Atoi(target); err != nil || t.Target < 1 {
			return Traffic{}, fmt.Errorf("traffic %q: @%s is not a number of gateways (1 or more); %s", s, target, want)
		}
	}
	if started {
		if t.Start, err = time.ParseDuration(start); err != nil || t.Start <= 0 {
			return Traffic{}, fmt.Errorf("traffic %q: +%s is not a positive duration; %s", s, start, want)
		}
	}
	if pulsed {
		on, off, ok := strings.Cut(pulse, "/")
		var e1, e2 error
		t.On, e1 = time.ParseDuration(on)
		t.Off, e2 = time.ParseDuration(off)
		if !ok || e1 != nil || e2 != nil || t.On <= 0 || t.Off <= 0 {
			return Traffic{}, fmt.Errorf("traffic %q: ~%s is not ON/OFF, two positive durations; %s", s, pulse, want)
		}
	}
	return t, nil
}

// arrivals generates arrival times (ns, ascending) from its own random
// stream.
type arrivals struct {
	rng  *rand.Rand
	kind TrafficKind
	mean float64 // mean gap between arrivals (Steady, Flood) or loads (PageLoad), ns
	t    float64 // time of the last Poisson event, ns

	// PageLoad: requests of loads already started, a min-heap.
	heap     []int64
	nextLoad int64
}

func newArrivals(rng *rand.Rand, tr Traffic, limit int, window int64) *arrivals {
	rate := tr.Factor * float64(limit) / float64(window) // requests per ns
	a := &arrivals{rng: rng, kind: tr.Kind, mean: 1 / rate}
	if tr.Kind == PageLoad {
		a.mean *= PageLoadBurst
		a.nextLoad = a.poisson()
	}
	return a
}

func (a *arrivals) poisson() int64 {
	a.t += a.rng.ExpFloat64() * a.mean
	return int64(a.t)
}

// next returns the next arrival time.
func (a *arrivals) next() int64 {
	if a.kind != PageLoad {
		return a.poisson()
	}
	for len(a.heap) == 0 || a.nextLoad <= a.heap[0] {
		start := a.nextLoad
		for i := 0; i < PageLoadBurst; i++ {
			a.pushHeap(start + a.rng.Int64N(PageLoadSpread))
		}
		a.nextLoad = a.poisson()
	}
	return a.popHeap()
}

func (a *arrivals) pushHeap(t int64) {
	h := append(a.heap, t)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	a.heap = h
}

func (a *arrivals) popHeap() int64 {
	h := a.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r] < h[l] {
			m = r
		}
		if h[i] <= h[m] {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	a.heap = h
	return top
}
