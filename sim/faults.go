package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

// Faults are the ways a run's store and gateways depart from the study's
// ideal store (instant, never failing, one clock). The zero Faults is the
// study's model, and a run with it makes exactly the decisions it always
// made.
type Faults struct {
	// RTT is the median store round trip. A sync's push reaches the store
	// after half of one, and its pull the gateway after the other half; a
	// decision that asks the store is made when the answer arrives. 0: the
	// store answers at once.
	RTT time.Duration
	// RTTP99, when not 0, draws each round trip from a log-normal law with
	// median RTT and 99th percentile RTTP99 (>= RTT); 0: every round trip
	// takes RTT.
	RTTP99 time.Duration
	// Loss is the probability that a sync's push is lost, and again that
	// its pull is (the store applied the push but the answer never came
	// back). The gateway retries at its next sync.
	Loss float64
	// Skew bounds the gateways' clock offsets: each gateway's clock is off
	// by an amount drawn uniformly from [-Skew, Skew]. Gateways read their
	// own clocks and the store takes the time a gateway sends, as the live
	// stores do.
	Skew time.Duration
	// Restarts are the times a gateway loses its state (admits not yet
	// pushed, lease slots held, requests waiting).
	Restarts []Restart
	// Members are changes of the fleet's size, in time order: at At the
	// live gateways become Gateways. Newcomers take the lowest free
	// indexes; departures are the highest indexes, and crash (their
	// unsynced admits are lost, their lease slots stay counted until the
	// others learn they left). Traffic goes to the live gateways at once.
	// The others learn of a change as the live limiter's membership does:
	// a newcomer knows the fleet when it joins; the others at their next
	// heartbeat (every MemberTTL/3, at a phase drawn per gateway) after a
	// join, or after a departed member's registration lapses (MemberTTL
	// after its last heartbeat). A gateway that learns makes its design
	// anew under the new K, inheriting its local quota's history, pushes
	// what the old one had not, and syncs at once; its later pushes settle
	// the departed members' lease slots (store.Push.Gone).
	Members []MemberChange
	// MemberTTL is the membership's lease; 0: 10 s, the live default.
	MemberTTL time.Duration
	// Outages are spans during which the store answers nothing. A gateway
	// whose sync fails, or whose calls on the request path fail FailAfter
	// times in a row, falls back (design.Gateway.Fallback) for every
	// request until a sync succeeds, as the live limiter does (which tries
	// again within 250 ms; here at the gateway's next sync); a request
	// whose own call failed is abandoned (design.Gateway.Abandon) and falls
	// back. Syncs of a design that needs none (central-log) run while it
	// has something to push or falls back.
	Outages []Outage
	// Forgets are the times the store loses everything it holds, as a
	// Redis restarted without persistence does: the gateways keep a
	// history of their admits (design.Config.Reseed), find the loss at
	// their next contact and push them again at once.
	Forgets []time.Duration
}

// MemberChange is the fleet's size changing at a time.
type MemberChange struct {
	At       time.Duration
	Gateways int
}

// DefaultMemberTTL is the live limiter's default membership lease.
const DefaultMemberTTL = 10 * time.Second

// Restart is a gateway losing its state at a time.
type Restart struct {
	At      time.Duration
	Gateway int // AllGateways: every gateway at once
}

// AllGateways in a Restart restarts the whole fleet.
const AllGateways = -1

// Bounds on the faults.
const (
	MaxRTT      = 10 * time.Second
	MaxSkew     = time.Hour
	MaxRestarts = 1000
)

// Active reports whether any fault is set.
func (f Faults) Active() bool {
	return f.RTT > 0 || f.Loss > 0 || f.Skew > 0 || len(f.Restarts) > 0 || len(f.Members) > 0 || len(f.Outages) > 0 || len(f.Forgets) > 0
}

// memberTTL is the membership's lease.
func (f Faults) memberTTL() time.Duration {
	if f.MemberTTL > 0 {
		return f.MemberTTL
	}
	return DefaultMemberTTL
}

// slots is how many gateway indexes a run with faults f and k gateways at
// the start uses: the most live at once.
func (f Faults) slots(k int) int {
	for _, c := range f.Members {
		k = max(k, c.Gateways)
	}
	return k
}

func (f Faults) validate(p Params) error {
	switch {
	case f.RTT < 0 || f.RTT > MaxRTT:
		return fmt.Errorf("rtt %v: must be between 0 and %v", f.RTT, MaxRTT)
	case f.RTTP99 != 0 && (f.RTT == 0 || f.RTTP99 < f.RTT || f.RTTP99 > MaxRTT):
		return fmt.Errorf("rtt p99 %v: needs a median rtt, and must be at least it (%v) and at most %v", f.RTTP99, f.RTT, MaxRTT)
	case !(f.Loss >= 0 && f.Loss <= 1):
		return fmt.Errorf("sync loss %v: must be a probability between 0 and 1", f.Loss)
	case f.Skew < 0 || f.Skew > MaxSkew:
		return fmt.Errorf("clock skew %v: must be between 0 and %v", f.Skew, MaxSkew)
	case len(f.Restarts) > MaxRestarts:
		return fmt.Errorf("%d restarts: at most %d", len(f.Restarts), MaxRestarts)
	}
	var last time.Duration
	for _, c := range f.Members {
		switch {
		case c.At <= last || c.At >= p.Duration:
			return fmt.Errorf("members change at %v: must be inside the run (0, %v) and after the one before", c.At, p.Duration)
		case c.Gateways < 1 || c.Gateways > design.MaxGateways:
			return fmt.Errorf("members change at %v to %d gateways: must be between 1 and %d", c.At, c.Gateways, design.MaxGateways)
		}
		last = c.At
	}
	if f.MemberTTL < 0 || f.MemberTTL > time.Hour {
		return fmt.Errorf("member ttl %v: want 0 (10s) to 1h", f.MemberTTL)
	}
	if err := validateOutages(f.Outages, f.Forgets, p.Duration); err != nil {
		return err
	}
	for _, r := range f.Restarts {
		switch {
		case r.At <= 0 || r.At >= p.Duration:
			return fmt.Errorf("restart at %v: must be inside the run (0, %v)", r.At, p.Duration)
		case r.Gateway != AllGateways && (r.Gateway < 0 || r.Gateway >= p.Gateways):
			return fmt.Errorf("restart of gateway %d: the fleet has gateways 0 to %d", r.Gateway, p.Gateways-1)
		}
	}
	return nil
}

// flags is the command-line form of the set faults, each with a leading
// space.
func (f Faults) flags() string {
	var s string
	if f.RTT > 0 {
		s += " --rtt " + f.RTT.String()
	}
	if f.RTTP99 > 0 {
		s += " --rtt-p99 " + f.RTTP99.String()
	}
	if f.Loss > 0 {
		s += " --sync-loss " + strconv.FormatFloat(f.Loss, 'g', -1, 64)
	}
	if f.Skew > 0 {
		s += " --clock-skew " + f.Skew.String()
	}
	if len(f.Restarts) > 0 {
		s += " --restart " + RestartsString(f.Restarts)
	}
	if len(f.Members) > 0 {
		s += " --members " + MembersString(f.Members)
	}
	if f.MemberTTL > 0 {
		s += " --member-ttl " + f.MemberTTL.String()
	}
	if len(f.Outages) > 0 {
		s += " --outage " + OutagesString(f.Outages)
	}
	if len(f.Forgets) > 0 {
		s += " --forget " + ForgetsString(f.Forgets)
	}
	return s
}

// String is the command-line form of the set faults, e.g. "--rtt 10ms
// --sync-loss 0.1"; "" when none is.
func (f Faults) String() string { return strings.TrimPrefix(f.flags(), " ") }

// ParseFaults parses what Faults.String writes.
func ParseFaults(s string) (Faults, error) {
	var f Faults
	fields := strings.Fields(s)
	if len(fields)%2 != 0 {
		return f, fmt.Errorf("faults %q: want flag value pairs such as --rtt 10ms --sync-loss 0.1", s)
	}
	for i := 0; i < len(fields); i += 2 {
		v := fields[i+1]
		var err error
		switch fields[i] {
		case "--rtt":
			f.RTT, err = time.ParseDuration(v)
		case "--rtt-p99":
			f.RTTP99, err = time.ParseDuration(v)
		case "--sync-loss":
			f.Loss, err = strconv.ParseFloat(v, 64)
		case "--clock-skew":
			f.Skew, err = time.ParseDuration(v)
		case "--restart":
			f.Restarts, err = ParseRestarts(v)
		case "--members":
			f.Members, err = ParseMembers(v)
		case "--member-ttl":
			f.MemberTTL, err = time.ParseDuration(v)
		case "--outage":
			f.Outages, err = ParseOutages(v)
		case "--forget":
			f.Forgets, err = ParseForgets(v)
		default:
			err = fmt.Errorf("unknown flag %q: want --rtt, --rtt-p99, --sync-loss, --clock-skew, --restart, --members, --member-ttl, --outage or --forget", fields[i])
		}
		if err != nil {
			return Faults{}, fmt.Errorf("faults %q: %w", s, err)
		}
	}
	return f, nil
}

// RestartsString is the --restart form of rs: "10m:0,20m:all".
func RestartsString(rs []Restart) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		g := strconv.Itoa(r.Gateway)
		if r.Gateway == AllGateways {
			g = "all"
		}
		parts[i] = r.At.String() + ":" + g
	}
	return strings.Join(parts, ",")
}

// ParseRestarts parses restarts written T:G (gateway G, or "all", at time
// T; T alone restarts gateway 0), several joined by commas.
func ParseRestarts(s string) ([]Restart, error) {
	if s == "" {
		return nil, nil
	}
	var out []Restart
	for _, part := range strings.Split(s, ",") {
		at, g, has := strings.Cut(strings.TrimSpace(part), ":")
		d, err := time.ParseDuration(at)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("restart %q: %q is not a positive duration; want T:G, e.g. 10m:0 or 10m:all", part, at)
		}
		r := Restart{At: d}
		switch {
		case !has:
		case g == "all":
			r.Gateway = AllGateways
		default:
			if r.Gateway, err = strconv.Atoi(g); err != nil || r.Gateway < 0 {
				return nil, fmt.Errorf("restart %q: %q is not a gateway index or \"all\"; want T:G, e.g. 10m:0 or 10m:all", part, g)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// MembersString is the --members form of cs: "5m:9,12m:7".
func MembersString(cs []MemberChange) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.At.String() + ":" + strconv.Itoa(c.Gateways)
	}
	return strings.Join(parts, ",")
}

// ParseMembers parses fleet size changes written T:K (at time T the fleet
// becomes K gateways), several joined by commas.
func ParseMembers(s string) ([]MemberChange, error) {
	if s == "" {
		return nil, nil
	}
	var out []MemberChange
	for _, part := range strings.Split(s, ",") {
		at, k, has := strings.Cut(strings.TrimSpace(part), ":")
		d, err := time.ParseDuration(at)
		if err != nil || d <= 0 || !has {
			return nil, fmt.Errorf("members %q: want T:K with T a positive duration, e.g. 5m:9", part)
		}
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("members %q: %q is not a fleet size of at least 1; want T:K, e.g. 5m:9", part, k)
		}
		out = append(out, MemberChange{At: d, Gateways: n})
	}
	return out, nil
}

// delays draws a run's store round trips from its own stream, so that the
// arrivals are the same whatever the faults.
type delays struct {
	rng    *rand.Rand
	median float64
	sigma  float64 // log-normal spread; 0: fixed
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

func newDelays(f Faults, seed uint64) *delays {
	d := &delays{rng: rngFor(seed, streamFaults), median: float64(f.RTT)}
	if f.RTTP99 > 0 {
		d.sigma = math.Log(float64(f.RTTP99)/float64(f.RTT)) / z99
	}
	return d
}

// rtt draws one round trip (ns).
func (d *delays) rtt() int64 {
	if d.sigma == 0 {
		return int64(d.median)
	}
	return int64(d.median * math.Exp(d.sigma*d.rng.NormFloat64()))
}

// lost draws whether one message is lost.
func (d *delays) lost(p float64) bool { return p > 0 && d.rng.Float64() < p }
