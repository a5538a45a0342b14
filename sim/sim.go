// Package sim is fleetlimit's deterministic discrete-event simulator: it runs
// K gateways of one design for one key against a traffic model, syncing each
// gateway with the embedded store every Δ, and measures what the fleet
// admits, rejects and costs.
//
// A run is a pure function of its Params: time is virtual, randomness comes
// from streams seeded by Params.Seed, and the store is memstore, ideal by
// default or, with Params.Faults, slow, lossy, on skewed clocks and with
// gateways that restart. The package
// never reads a clock, starts a goroutine, or does I/O; running many runs in
// parallel is the sweep package's job.
package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// Params fully determine a run.
type Params struct {
	Design     string
	Gateways   int           // K
	Sync       time.Duration // Δ
	Limit      int           // L
	Window     time.Duration // W
	WindowKind window.Kind
	// WindowBuckets, when > 0, counts the window in that many counters
	// instead of the exact log (window.Spec.Buckets).
	WindowBuckets int
	Traffic       Traffic
	// Also are further traffics on the same key, arriving together with
	// Traffic (an honest client and a flood, say).
	Also        []Traffic
	Routing     Routing
	Duration    time.Duration // simulated time
	AlignedSync bool          // every gateway syncs at the multiples of Δ
	Seed        uint64
	// LeasePolicy is how the store sizes lease grants at a sync: ""
	// (first-come, the study's: each ask met while the limit allows) or
	// MaxMin.
	LeasePolicy string
	// Faults are the store's and the gateways' departures from the ideal
	// (none: the study's model).
	Faults Faults
	// Limits are further limits on the key, beside Limit per Window (a
	// burst limit of 10 a second, say): a request is admitted only if
	// every one admits it, and counted against them all only then
	// (design.Multi). A run with them takes no faults; its figures are
	// against Limit, and Result.Limits against each of these.
	Limits []Limit `json:",omitempty"`
}

// MaxMin is the lease policy in the spirit of Google's Doorman: the store
// divides the room by the gateways' last asks, max-min fair
// (memstore.Key.SetMaxMinLeases).
const MaxMin = "max-min"

// Defaults are the study's defaults for what Params leave open.
func Defaults() Params {
	return Params{
		Design:   "shared-counter",
		Gateways: 8,
		Sync:     time.Second,
		Limit:    100,
		Window:   time.Minute,
		Traffic:  Traffic{Kind: Steady, Factor: 0.8},
		Duration: time.Hour,
		Seed:     1,
	}
}

// MaxRequests bounds the expected requests of one run, so that a typo in a
// flood factor or duration fails at once instead of running for hours.
const MaxRequests = 2e9

// Bounds on a run's parameters, so that no input can make a run hold more
// than a few hundred MB or loop past the time a study allows.
const (
	MaxLimit    = 10_000_000           // L: the store holds up to L stamps
	MaxDuration = 366 * 24 * time.Hour // simulated time
	MinSync     = time.Millisecond     // Δ
	MaxSyncs    = 2e9                  // K × duration / Δ
)

// Validate reports the first thing wrong with p, saying what is allowed.
func (p Params) Validate() error {
	info, err := catalog.Lookup(p.Design)
	if err != nil {
		return err
	}
	switch {
	case p.LeasePolicy != "" && p.LeasePolicy != "first-come" && p.LeasePolicy != MaxMin:
		return fmt.Errorf("lease policy %q: want first-come or %s", p.LeasePolicy, MaxMin)
	case p.LeasePolicy == MaxMin && !info.Leases:
		return fmt.Errorf("lease policy %s: design %s holds no leases", MaxMin, p.Design)
	case info.FixedWindow && p.WindowKind != window.Fixed:
		return fmt.Errorf("design %s counts in fixed windows only: give --window-kind fixed", p.Design)
	case p.Gateways < 1 || p.Gateways > 4096:
		return fmt.Errorf("gateways %d: must be between 1 and 4096", p.Gateways)
	case p.Sync <= 0:
		return fmt.Errorf("sync %v: must be a positive duration, e.g. 1s or 300ms", p.Sync)
	case p.Limit < 1 || p.Limit > MaxLimit:
		return fmt.Errorf("limit %d: must be at least 1 and at most %d", p.Limit, MaxLimit)
	case p.Sync > 0 && p.Sync < MinSync:
		return fmt.Errorf("sync %v: must be at least %v", p.Sync, MinSync)
	case p.Window <= 0:
		return fmt.Errorf("window %v: must be a positive duration, e.g. 1m", p.Window)
	case p.Routing != Even && p.Routing != Uneven:
		return fmt.Errorf("routing %v: want even or uneven", p.Routing)
	case p.Duration <= p.Window:
		return fmt.Errorf("duration %v: must be longer than the window (%v), since figures are taken after the first window", p.Duration, p.Window)
	case p.Duration > MaxDuration:
		return fmt.Errorf("duration %v: must be at most %v of simulated time", p.Duration, MaxDuration)
	}
	if err := p.Spec().Validate(); err != nil {
		return err
	}
	if err := p.Faults.validate(p); err != nil {
		return err
	}
	if err := p.validateLimits(); err != nil {
		return err
	}
	for _, t := range p.Mix() {
		if err := t.validate(p); err != nil {
			return err
		}
	}
	expected := p.expected()
	switch {
	case expected > MaxRequests:
		return fmt.Errorf("traffic %v for %v at limit %d is about %.3g requests: more than the %.0g a run allows", p.MixString(), p.Duration, p.Limit, expected, float64(MaxRequests))
	case expected < 1:
		return fmt.Errorf("traffic %v for %v at limit %d is about %.3g requests: fewer than one, so the run would measure nothing", p.MixString(), p.Duration, p.Limit, expected)
	}
	if syncs := float64(p.Gateways) * float64(p.Duration) / float64(p.Sync); syncs > MaxSyncs {
		return fmt.Errorf("%d gateways syncing every %v for %v make %.3g syncs: more than the %.0g a run allows", p.Gateways, p.Sync, p.Duration, syncs, float64(MaxSyncs))
	}
	return nil
}

// validate reports what is wrong with t in run p.
func (t Traffic) validate(p Params) error {
	switch {
	case t.Kind < Steady || t.Kind > Flood || !(t.Factor > 0):
		return fmt.Errorf("traffic %v: want steady:F, pageload:F or flood:M with a positive number", t)
	case t.Target > p.Gateways:
		return fmt.Errorf("traffic %v: it targets %d gateways of %d", t, t.Target, p.Gateways)
	case t.Start >= p.Duration:
		return fmt.Errorf("traffic %v: it starts at %v, not before the run ends at %v", t, t.Start, p.Duration)
	case (t.On > 0) != (t.Off > 0) || t.On < 0 || t.Off < 0:
		return fmt.Errorf("traffic %v: a pulse needs ON and OFF, both positive", t)
	}
	return nil
}

// expected is the run's expected number of requests.
func (p Params) expected() float64 {
	var n float64
	for _, t := range p.Mix() {
		n += t.Factor * t.share() * float64(p.Limit) * float64(p.Duration-t.Start) / float64(p.Window)
	}
	return n
}

// Mix is every traffic of the run: Traffic, then Also.
func (p Params) Mix() []Traffic { return append([]Traffic{p.Traffic}, p.Also...) }

// HasFlood reports whether a traffic of the run is a flood.
func (p Params) HasFlood() bool {
	for _, t := range p.Mix() {
		if t.Kind == Flood {
			return true
		}
	}
	return false
}

// MixString is the --traffic spec of the run's mix.
func (p Params) MixString() string {
	s := p.Traffic.String()
	for _, t := range p.Also {
		s += "," + t.String()
	}
	return s
}

// Spec is the run's window.
func (p Params) Spec() window.Spec {
	return window.Spec{Size: p.Window, Kind: p.WindowKind, Buckets: p.WindowBuckets}
}

// String names the run the way the command line would.
func (p Params) String() string {
	s := fmt.Sprintf("--design %s --gateways %d --sync %v --limit %d --window %v --traffic %v --routing %v --duration %v --seed %d --window-kind %v",
		p.Design, p.Gateways, p.Sync, p.Limit, p.Window, p.MixString(), p.Routing, p.Duration, p.Seed, p.WindowKind)
	if p.WindowBuckets > 0 {
		s += fmt.Sprintf(" --window-buckets %d", p.WindowBuckets)
	}
	if p.AlignedSync {
		s += " --aligned-sync"
	}
	if p.LeasePolicy == MaxMin {
		s += " --lease-policy " + MaxMin
	}
	for _, l := range p.Limits {
		s += " --also-limit " + l.String()
	}
	return s + p.Faults.flags()
}

// Result is what one run reports.
type Result struct {
	Params Params

	Requests   int64 // arrivals
	Admitted   int64
	Rejected   int64
	RoundTrips int64 // requests whose decision waited on the store
	// Fallbacks are the requests the fallback decided while the store was
	// down (Faults.Outages).
	Fallbacks int64 `json:",omitempty"`
	Syncs     int64 // gateway syncs performed

	// Store is what the store carried: stamps pushed (at syncs and
	// carried by round trips) and pulled (Pull.Expiring), and the most
	// entries it held for the key.
	Store StoreCounts

	Figures

	// Parts, with several traffics or a flood that starts late, are each
	// traffic's figures, before the attack and from it.
	Parts []PartResult `json:",omitempty"`
	// AttackStart is when the first flood that starts late starts (see
	// Figures.AttackWindowX).
	AttackStart time.Duration `json:",omitempty"`
	// Limits are the figures against each of Params.Limits.
	Limits []LimitResult `json:",omitempty"`
}

// PartResult is one traffic's figures in a run: its requests and
// rejections before the attack starts (none without an attack) and from
// then on.
type PartResult struct {
	Traffic        string
	Before, During Counts
}

// StoreCounts are what the store carried in a run. A run leaves out the
// syncs that change nothing, whose pulls still carry stamps: PulledStamps
// counts those of the syncs it performed, which depend on how it ran;
// RunKeys performs every sync, as a live fleet does.
type StoreCounts struct {
	PushedStamps int64 // admits pushed, at syncs and carried by round trips
	PulledStamps int64 // expiring stamps sent back at syncs
	PeakEntries  int64 // the most entries the store held for the key
}

// Counts are requests and how many of them were rejected.
type Counts struct{ Requests, Rejected int64 }

// RejectedPct is the rejected share in percent, NaN without requests.
func (c Counts) RejectedPct() float64 {
	if c.Requests == 0 {
		return math.NaN()
	}
	return 100 * float64(c.Rejected) / float64(c.Requests)
}

// Stream numbers keep the random streams of a run apart: the arrivals and
// the routing do not depend on the design, so every design of a scenario
// sees the very same requests at the very same gateways.
const (
	streamArrivals = iota + 1
	streamRouting
	streamPhases
	streamFaults // round trips and losses
	streamSkew   // the gateways' clocks
	streamBeats  // the phases of the membership's heartbeats
)

func rngFor(seed uint64, stream uint64) *rand.Rand { return rand.New(pcgFor(seed, stream)) }

// pcgFor is the generator of rngFor(seed, stream).
func pcgFor(seed uint64, stream uint64) *rand.PCG {
	return rand.NewPCG(seed, stream*0x9E3779B97F4A7C15)
}

// Trace, when set, is called with every decision of a run.
type Trace func(t int64, gateway int, v design.Verdict)

// Run runs one simulation.
func Run(p Params) (Result, error) { return RunTrace(p, nil) }

// RunTrace runs one simulation and reports every decision to trace.
func RunTrace(p Params, trace Trace) (Result, error) {
	r, _, err := run(p, trace, modeAuto)
	return r, err
}

type mode uint8

const (
	modeAuto mode = iota
	modeEager
	modeLazy
	modeFaulty // the fault engine, even with no fault set
	modePlain  // the eager mode, asking the design for every decision
	modeSkip   // the eager mode leaving out quiet syncs, on arrivals drawn ahead
	// modeDecisions is modeAuto for a driver that reads only the
	// decisions (RunDecisions): the lazy mode wherever arrivals are sparse,
	// BusySyncs or not, and no sync after the last arrival
	modeDecisions
)

// The expected arrivals per gateway per sync interval under which a run
// skips quiet syncs in the lazy mode: lazyBelow, and lazyBelowSkipping for a
// run whose eager mode can leave quiet syncs out itself (skipper). Every
// mode makes the same decisions (tested); the choice is only about speed:
// the lazy mode's scheduling pays off when most syncs are idle, the eager
// mode's pass over every sync when few are (docs/performance.md), and
// for designs whose syncs are seldom quiet (catalog.Info.BusySyncs).
const (
	lazyBelow         = 0.5
	lazyBelowSkipping = 0.1
	skipBelow         = 2
)

// source is where a run's arrivals come from: drawn as the run goes (mix)
// or ahead of it (replay).
type source interface {
	// next returns the next arrival: its time, gateway and traffic; at
	// or past the run's end once there are no more
	next() (t int64, g, c int)
	// bulkable reports whether refuseBefore may be called, counts being
	// whether the design counts its rejections
	bulkable(counts bool) bool
	// refuseBefore passes over the arrivals before end, telling rf each
	// one's gateway where it counts them, and returns how many
	refuseBefore(end int64, rf *refusals) int
	// setLive makes the arrivals reach the first k gateways
	setLive(k int)
}

// runner is one run's state.
type runner struct {
	p     Params
	info  catalog.Info
	gws   []design.Gateway
	key   *memstore.Key
	src   source
	m     *meter
	trace Trace
	// history, when set (RunHistory), receives the fault engine's
	// happenings
	history History
	rf      *refusals  // the eager mode's sure rejections, when it keeps them
	push    store.Push // scratch for sync
	pull    store.Pull

	delta int64
	phase []int64 // gateway i syncs at phase[i] + r*delta, r >= 0
	order []int   // gateways in the order their syncs come round
	end   int64

	skipQuiet bool // the eager mode may leave out the syncs the lazy mode would
	noTail    bool // no sync after the last arrival (modeDecisions)

	multi *multiRun // a key with several limits (Params.Limits), else nil

	watch *watch // a timeline's view of the run's steps, else nil
}

// run runs p in the given mode and also returns the syncs it performed.
func run(p Params, trace Trace, md mode) (Result, int64, error) { return runOn(p, nil, trace, md) }

// runOn is run on the arrivals rq, drawn ahead for p (nil: drawn as the run
// goes).
func runOn(p Params, rq *Requests, trace Trace, md mode) (Result, int64, error) {
	var reached []bool // which gateways a replay's lazy run needs (execute)
	if md == modeDecisions && rq != nil && p.Validate() == nil {
		reached = rq.reached(p.Faults.slots(p.Gateways))
	}
	r, err := newRunner(p, trace, rq, reached)
	if err != nil {
		return Result{}, 0, err
	}
	r.execute(md)
	res := r.m.result(r.end)
	if r.multi != nil {
		res.Limits = r.multi.limitResults(p, r.end)
	}
	return res, r.m.performed, nil
}

// newRunner sets up run p: its gateways, store, traffic (the arrivals rq,
// or drawn as the run goes when nil) and sync phases. With reached, it
// builds only gateway 0 and those reached: execute builds the others
// unless its run can do without them.
func newRunner(p Params, trace Trace, rq *Requests, reached []bool) (*runner, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	info, _ := catalog.Lookup(p.Design)
	k := p.Faults.slots(p.Gateways) // indexes that gateways joining later take too
	r := &runner{p: p, info: info, trace: trace, delta: int64(p.Sync), end: int64(p.Duration)}
	r.gws = make([]design.Gateway, k)
	for i := range p.Gateways {
		if i == 0 || reached == nil || reached[i] {
			r.gws[i] = info.New(r.gatewayConfig(i))
		}
	}
	r.key = memstore.NewKey(p.Limit, p.Spec())
	if p.LeasePolicy == MaxMin {
		r.key.SetMaxMinLeases()
	}
	if info.RateLeases != "" {
		r.key.SetRateLeases(info.RateLeases == catalog.RateFair)
	}
	if rq != nil {
		r.src = &replay{rq: rq}
	} else {
		r.src = newMix(p)
	}
	r.m = newMeter(p, info.Leases)

	r.phase, r.order = syncPhases(p, k)
	r.m.syncs = scheduledSyncs(p, info, r.phase)
	if len(p.Limits) > 0 {
		r.newMulti()
	}
	return r, nil
}

// syncPhases returns when each of run p's k gateway indexes first syncs
// (gateway i at phase[i] + nΔ) and the order their syncs come round in:
// with one Δ for all, the order of the phases (ties, as with aligned syncs,
// in gateway order).
func syncPhases(p Params, k int) (phase []int64, order []int) {
	phase, order = make([]int64, k), make([]int, k)
	prng := rngFor(p.Seed, streamPhases)
	for i := range phase {
		order[i] = i
		if !p.AlignedSync {
			phase[i] = prng.Int64N(int64(p.Sync))
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return phase[order[a]] < phase[order[b]] })
	return phase, order
}

// scheduledSyncs is Result.Syncs: the syncs of run p's K gateways within its
// duration, none for a design that never syncs.
func scheduledSyncs(p Params, info catalog.Info, phase []int64) int64 {
	if info.NoSync {
		return 0
	}
	return SyncsWithin(p, phase)
}

// SyncPhases returns when each of run p's gateways first syncs (gateway i
// at phase[i] + nΔ) and the order their syncs come round in, as a run of p
// syncs them: for a driver of the designs outside the simulator (a replay
// of requests of several costs) that must sync as a run would.
func SyncPhases(p Params) (phase []int64, order []int) { return syncPhases(p, p.Gateways) }

// ScheduledSyncs returns the Syncs of run p's Result without running it:
// each gateway's syncs within the run, whether performed or left out.
func ScheduledSyncs(p Params) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	info, _ := catalog.Lookup(p.Design)
	phase, _ := syncPhases(p, p.Faults.slots(p.Gateways))
	return scheduledSyncs(p, info, phase), nil
}

// SyncsWithin is ScheduledSyncs for a design that syncs, its gateways'
// phases given (SyncPhases): a driver that runs many designs on one run's
// phases counts them once.
func SyncsWithin(p Params, phase []int64) int64 {
	var n int64
	end, delta := int64(p.Duration), int64(p.Sync)
	for _, ph := range phase[:min(p.Gateways, len(phase))] {
		if ph < end {
			n += (end - ph + delta - 1) / delta
		}
	}
	return n
}

// buildAll builds the gateways newRunner left out.
func (r *runner) buildAll() {
	for i := range r.p.Gateways {
		if r.gws[i] == nil {
			r.gws[i] = r.info.New(r.gatewayConfig(i))
		}
	}
}

// execute runs r in the given mode.
func (r *runner) execute(md mode) {
	p := r.p
	_, lazy := r.gws[0].(lazy)
	if _, rl := r.gws[0].(rateLazy); rl && (md == modeLazy || md == modeDecisions) {
		lazy = true // the lazy mode holds their rates (heldRates); no other mode does
	}
	perGateway := p.expected() / float64(p.Duration) * float64(p.Sync) / float64(p.Gateways)
	below := lazyBelow
	if r.canSkip() {
		below = lazyBelowSkipping
	}
	// A replay's lazy run need not have the gateways no request reaches,
	// for a design whose fresh gateways never sync anything: every other
	// run has them all.
	sparse := md == modeDecisions && lazy && perGateway < below && r.info.FreshQuiet &&
		r.multi == nil && r.watch == nil && !p.Faults.Active() && !r.info.NoSync
	if !sparse {
		r.buildAll()
	}
	switch {
	case r.multi != nil: // every decision by the designs, every sync performed
		r.eager(!r.info.NoSync, false)
	case md == modeFaulty || p.Faults.Active():
		r.faulty()
	case r.watch != nil: // every decision by the designs, whose views it reads
		r.eager(!r.info.NoSync, false)
	case r.info.NoSync:
		r.eager(false, md != modePlain)
	case md == modeLazy && lazy, md == modeAuto && lazy && !r.info.BusySyncs && perGateway < below:
		r.lazy()
	case md == modeDecisions && lazy && perGateway < below:
		r.noTail = true
		r.lazy()
	default:
		// the eager mode proper (modeEager) performs every sync: the
		// store's counts of many keys come from it (RunKeys)
		r.skipQuiet = md == modeAuto && !r.info.BusySyncs && perGateway < skipBelow || md == modeSkip
		r.noTail = md == modeDecisions
		r.eager(true, md != modePlain)
	}
}

// storeSync is a sync at the store, metered.
func (r *runner) storeSync(now int64, p store.Push) store.Pull {
	var pull store.Pull
	r.storeSyncTo(now, &p, &pull)
	return pull
}

// storeSyncTo is storeSync without the copies.
func (r *runner) storeSyncTo(now int64, p *store.Push, pull *store.Pull) {
	r.key.SyncTo(now, p, pull)
	r.m.storeCall(len(p.Admits), len(pull.Expiring), r.key.Entries())
}

// storeAnswer is a query the store answers, metered with the push it
// carries.
func (r *runner) storeAnswer(now int64, g int, q store.Query) store.Answer {
	a := r.key.Answer(now, g, q)
	pushed := 0
	if q.Carry != nil {
		pushed = len(q.Carry.Admits)
	}
	r.m.storeCall(pushed, 0, r.key.Entries())
	return a
}

// gatewayConfig is gateway g's design configuration.
func (r *runner) gatewayConfig(g int) design.Config {
	p := r.p
	return design.Config{Limit: p.Limit, Window: p.Spec(),
		Gateways: p.Gateways, Gateway: g, Sync: p.Sync, Mend: len(p.Faults.Outages) > 0 || len(p.Faults.Forgets) > 0}
}

// heldBefore returns gateway g's held lease slots before a step that may
// change them, for heldAfter (0 outside the lease designs).
func (r *runner) heldBefore(g int) int {
	if !r.info.Leases {
		return 0
	}
	return r.gws[g].Held()
}

// spentSlot reports whether the fallback decision gateway g just made, with
// held slots before it, spent one of them (Happening.Slot).
func (r *runner) spentSlot(g, held int) bool {
	return r.info.Leases && r.gws[g].Held() < held
}

// heldAfter books the change in gateway g's held lease slots at t.
func (r *runner) heldAfter(t int64, g, before int) {
	if r.info.Leases {
		r.m.held(t, r.gws[g].Held()-before)
	}
}

// arrive hands the request at t, of traffic c, to gateway g: decide, ask
// the store if told to, resume.
func (r *runner) arrive(t int64, g, c int) {
	if r.multi != nil {
		r.arriveMulti(t, g, c)
		return
	}
	gw := r.gws[g]
	held := r.heldBefore(g)
	if r.watch != nil {
		r.watch.step(t)
	}
	v, q := gw.Decide(t, 1)
	if v == design.Ask {
		r.m.roundTrips++
		r.watch.asked(t)
		v = gw.Resume(t, 1, q, r.storeAnswer(t, g, q))
	}
	r.heldAfter(t, g, held)
	r.m.record(t, v, c)
	if r.trace != nil {
		r.trace(t, g, v)
	}
}

// sync is gateway g's sync at t: one atomic push and pull.
func (r *runner) sync(t int64, g int) {
	if r.multi != nil {
		r.syncMulti(t, g)
		return
	}
	gw := r.gws[g]
	held := r.heldBefore(g)
	if r.watch != nil {
		r.watch.step(t)
	}
	gw.SyncPush(t, &r.push)
	r.storeSyncTo(t, &r.push, &r.pull)
	gw.SyncPull(t, &r.pull)
	r.m.performed++
	r.watch.synced(t)
	r.heldAfter(t, g, held)
	if r.rf != nil {
		r.rf.renew(t, g)
	}
}

// eager performs every sync (when syncs is set), in time order, before the
// arrivals after it. With refusals it rejects surely rejected requests
// without asking the design.
func (r *runner) eager(syncs, refuse bool) {
	rr := roundRobin{r: r}
	if refuse {
		r.rf = r.newRefusals()
	}
	if syncs && r.skipQuiet {
		rr.skip = r.newSkipper()
	}
	rf := r.rf
	for {
		if rf != nil && rf.bulk {
			next := int64(never)
			if syncs {
				next = rr.next()
			}
			rf.inBulk(next)
		}
		t, g, c := r.src.next()
		if t >= r.end {
			break
		}
		if syncs {
			rr.upTo(t)
		}
		if rf != nil && rf.sure(t, g) {
			rf.refused(g)
			r.m.record(t, design.Reject, c)
			if r.trace != nil {
				r.trace(t, g, design.Reject)
			}
			continue
		}
		if rr.skip != nil {
			rr.skip.touch(g)
		}
		r.arrive(t, g, c)
		if rf != nil {
			rf.renew(t, g)
		}
	}
	if syncs && !r.noTail {
		rr.upTo(r.end - 1)
	}
}

// roundRobin performs the syncs of every gateway in turn: with one Δ for
// all, they come round in the order of their phases.
type roundRobin struct {
	r     *runner
	j     int   // next gateway in r.order
	round int64 // its round
	skip  *skipper
}

// next is the time of the next sync.
func (rr *roundRobin) next() int64 {
	return rr.r.phase[rr.r.order[rr.j]] + rr.round*rr.r.delta
}

// upTo performs every sync at or before t.
func (rr *roundRobin) upTo(t int64) {
	r := rr.r
	for {
		g := r.order[rr.j]
		at := r.phase[g] + rr.round*r.delta
		if at > t {
			return
		}
		switch {
		case rr.skip == nil:
			r.sync(at, g)
		case !rr.skip.skips(at, r.delta, g):
			rr.skip.touch(g)
			r.sync(at, g)
		}
		if rr.j++; rr.j == len(r.order) {
			rr.j = 0
			rr.round++
		}
	}
}
