package sim

import (
	"fmt"
	"strings"
	"time"
)

// Outage is a span during which the store answers nothing: every call that
// reaches it fails, as against a refused connection.
type Outage struct {
	At, For time.Duration
}

// FailAfter is how many request-path store calls must fail in a row before
// a gateway falls back for every request, as the live limiter's default
// (limiter.Config.FailAfter); a failed sync does it at once.
const FailAfter = 3

// OutagesString writes outages as ParseOutages reads them.
func OutagesString(os []Outage) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = o.At.String() + "+" + o.For.String()
	}
	return strings.Join(parts, ",")
}

// ParseOutages parses outages written T+D (the store answers nothing from
// time T for D), several joined by commas.
func ParseOutages(s string) ([]Outage, error) {
	if s == "" {
		return nil, nil
	}
	var out []Outage
	for _, part := range strings.Split(s, ",") {
		at, d, has := strings.Cut(strings.TrimSpace(part), "+")
		a, err1 := time.ParseDuration(at)
		l, err2 := time.ParseDuration(d)
		if !has || err1 != nil || err2 != nil || a <= 0 || l <= 0 {
			return nil, fmt.Errorf("outage %q: want T+D with positive durations, e.g. 10m+30s", part)
		}
		out = append(out, Outage{At: a, For: l})
	}
	return out, nil
}

// ForgetsString writes forget times as ParseForgets reads them.
func ForgetsString(ts []time.Duration) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}

// ParseForgets parses the times the store loses its data, joined by
// commas.
func ParseForgets(s string) ([]time.Duration, error) {
	if s == "" {
		return nil, nil
	}
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		t, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || t <= 0 {
			return nil, fmt.Errorf("forget %q: want a positive duration, e.g. 10m", part)
		}
		out = append(out, t)
	}
	return out, nil
}

// validateOutages checks outages and forget times against a run of length
// d: inside it, in time order, not overlapping.
func validateOutages(os []Outage, forgets []time.Duration, d time.Duration) error {
	if len(os) > MaxRestarts || len(forgets) > MaxRestarts {
		return fmt.Errorf("%d outages and %d forgets: at most %d of each", len(os), len(forgets), MaxRestarts)
	}
	var end time.Duration
	for _, o := range os {
		if o.At < end || o.At >= d || o.For <= 0 {
			return fmt.Errorf("outage %v+%v: must start inside the run (0, %v), after the one before ends, and last a while", o.At, o.For, d)
		}
		end = o.At + o.For
	}
	var last time.Duration
	for _, t := range forgets {
		if t <= last || t >= d {
			return fmt.Errorf("forget at %v: must be inside the run (0, %v) and after the one before", t, d)
		}
		last = t
	}
	return nil
}

// down reports whether the store answers nothing at t (ns).
func (f Faults) down(t int64) bool {
	for _, o := range f.Outages {
		if t < int64(o.At) {
			return false
		}
		if t < int64(o.At+o.For) {
			return true
		}
	}
	return false
}
