// Package replay runs an access log through every design: each key's
// requests, at the times the log gives and at the gateways it names (or
// routed as the simulator routes), decided by each design in the simulator
// and by the exact limit (central-log, which decides by the store's log),
// so that a platform team sees what each design would have done to its own
// traffic.
//
// Keys are independent, so each runs apart. A key's requests are gathered
// until it has been idle for two windows (the live limiter evicts such a
// key, and a key made anew starts afresh) or until MaxSegment of them, then
// run and forgotten: memory follows the keys active within two windows,
// not the log's length. Segments may run side by side on the caller's
// goroutines (Options.Parallel), their figures added in the log's order.
// The package reads no clock and starts no goroutine; a run is
// reproducible from the log and its Options, whatever the number of
// workers.
package replay

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fleetlimit/fleetlimit/accesslog"
	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// Routing is how requests reach the gateways.
type Routing int

// The routings.
const (
	Even         Routing = iota + 1 // each request to a gateway at random
	Uneven                          // gateway i with probability ∝ 1/i, as the study's uneven routing
	StickyKey                       // every request of a key to one gateway, by the key's hash
	FromLog                         // the gateway the log names (accesslog.Options.Gateway)
	StickyClient                    // every request of a client to one gateway, by the client's hash
)

var routingNames = map[string]Routing{"even": Even, "uneven": Uneven, "sticky-key": StickyKey, "log": FromLog, "sticky-client": StickyClient}

// ParseRouting reads a routing's name.
func ParseRouting(s string) (Routing, error) {
	if r, ok := routingNames[s]; ok {
		return r, nil
	}
	return 0, fmt.Errorf("routing %q: want even, uneven, sticky-key, sticky-client or log", s)
}

// String is the routing's name.
func (r Routing) String() string {
	for n, v := range routingNames {
		if v == r {
			return n
		}
	}
	return "unknown"
}

// Limit is a key's limit.
type Limit struct {
	Requests int
	Window   time.Duration
}

// Options configure a replay.
type Options struct {
	Designs  []string      // the designs to run; the exact limit always runs
	Gateways int           // K; with FromLog, at least the gateways the log names
	Sync     time.Duration // Δ
	Limit    Limit         // every key's limit, unless LimitOf says otherwise
	// LimitOf, when set, gives a key's limit (a serve configuration's
	// descriptor that matches it); false: the key is not limited, and its
	// requests are left out (counted in Report.Unlimited).
	LimitOf    func(key string) (Limit, bool)
	WindowKind window.Kind
	Routing    Routing
	// Speed divides the log's time since its first line (2: twice as
	// fast); Shift moves every time. 0 Speed is 1.
	Speed float64
	Shift time.Duration
	// Horizon, when set, replays the log as it is read, holding back
	// only the lines within Horizon of the latest: a line further back is
	// left out and counted (Report.Late), never moved. 0, the default,
	// orders the whole log first, whatever its disorder (servers write a
	// line when a request ends, and merged or rotated logs are out of
	// order by minutes): every readable line is replayed at its time.
	Horizon time.Duration
	// OrderBuffer is how many lines the ordering holds in memory before it
	// spills a sorted run to Runs (default
	// DefaultOrderBuffer); the runs are merged as the replay reads them.
	OrderBuffer int
	// Runs keeps the spilled runs (accesslog.TempRuns: on disk); nil keeps
	// them in memory.
	Runs RunStore
	Seed uint64 // for routing and sync phases
	// Parallel, when set, runs the keys' segments side by side: it calls
	// fn(w, i) for every i in [0, n), each on one of Workers workers w
	// (one worker's calls one after another), and returns once all have
	// (internal/workers.Pool). The package starts no goroutine itself;
	// the report is the same for any number of workers, and without
	// Parallel the segments run one after another.
	Parallel func(n int, fn func(w, i int))
	Workers  int

	// For tests: everySync runs each segment by the simulator's every
	// sync, to the run's end, and every segment of one request too
	// (replay's engine before it ran only what decisions need); decided,
	// when set, is told each design's decisions of a segment of requests
	// of cost 1 (from the workers: with Workers 1, in order).
	everySync bool
	decided   func(key string, start int64, design string, admits []bool)
	Top       int // keys named per design (default 5)
	// OnKey, when set, is called with each key's figures as a segment of
	// it finishes.
	OnKey func(KeyResult)
	// Progress, when set, is called every so many lines with the lines
	// read so far.
	Progress func(lines int)
	// Replaying, when set, is called every so many lines of an ordered
	// replay (the log read whole first) with the lines replayed and all.
	Replaying func(done, total int)
}

// Exact names the exact limit's figures in a Report.
const Exact = "central-log"

// MaxSegment is the most requests of one key run together; a key busier
// than that without pause is run in segments of it, each starting afresh.
const MaxSegment = 4 << 20

// MaxKeysHeld bounds the keys gathered at once; past it the least recently
// seen is run early (as the live limiter evicts past MaxKeys).
const MaxKeysHeld = 1 << 20

// Figures are one design's figures over a set of requests.
type Figures struct {
	Requests   int64
	Admitted   int64
	Rejected   int64
	FalseAdmit int64 `json:"false_admits"`  // admitted where the exact limit refused
	FalseRefus int64 `json:"false_rejects"` // refused where the exact limit admitted
	RoundTrips int64 `json:"round_trips"`   // decisions that waited on the store
	// KeySyncs are the keys' syncs: one item of a gateway's batched sync
	// every Δ for each key it holds (none for central-log, which decides by
	// the store alone), while the key is held (until idle for two windows).
	KeySyncs int64 `json:"key_syncs"`
	// WorstWindowX is the most admits of one key in one window, over the
	// key's limit: the worst key's.
	WorstWindowX float64 `json:"worst_window_x"`
	WorstKey     string  `json:"worst_key,omitempty"`
}

// add adds o's counts, and keeps the worst window.
func (f *Figures) add(o Figures, key string) {
	f.Requests += o.Requests
	f.Admitted += o.Admitted
	f.Rejected += o.Rejected
	f.FalseAdmit += o.FalseAdmit
	f.FalseRefus += o.FalseRefus
	f.RoundTrips += o.RoundTrips
	f.KeySyncs += o.KeySyncs
	if o.WorstWindowX > f.WorstWindowX {
		f.WorstWindowX, f.WorstKey = o.WorstWindowX, key
	}
}

// KeyResult is one segment of one key's requests, run by every design.
type KeyResult struct {
	Key   string
	Limit Limit
	Start int64 // the segment's first request, Unix ns
	End   int64 // its last
	// By design name, Exact's included.
	Designs map[string]Figures
}

// Affected is a key that a design treated unlike the exact limit.
type Affected struct {
	Key          string
	FalseAdmits  int64 `json:"false_admits"`
	FalseRejects int64 `json:"false_rejects"`
}

// Report is a replay's outcome.
type Report struct {
	Lines     int // lines read
	Requests  int64
	Keys      int   // distinct keys (segments of one key count once each)
	Segments  int   // key segments run
	Unlimited int64 // requests no limit applied to (LimitOf)
	Late      int64 // lines further back in time than Horizon, left out
	LateLines []int // the first few of them
	// Reordered are the lines that came after a later one and were put in
	// their place; Disorder is the furthest back one came; Runs, the
	// sorted runs the ordering spilled to disk.
	Reordered int64
	Disorder  time.Duration
	Runs      int
	Bad       int // unreadable lines
	BadLines  []accesslog.BadLine
	Start     int64 // the first request, Unix ns, as replayed
	End       int64 // the last
	Gateways  int
	// By design name, Exact first.
	Designs  []string
	Figures  map[string]Figures
	Affected map[string][]Affected // the keys most affected, per design
}

// Duration is the replayed span.
func (r Report) Duration() time.Duration { return time.Duration(r.End - r.Start) }

// PerSec is n a second of replayed time.
func (r Report) PerSec(n int64) float64 {
	s := r.Duration().Seconds()
	if s <= 0 {
		return 0
	}
	return float64(n) / s
}

// validate reports what is wrong with opt.
func (opt *Options) validate() error {
	if opt.Speed == 0 {
		opt.Speed = 1
	}
	if opt.OrderBuffer == 0 {
		opt.OrderBuffer = DefaultOrderBuffer
	}
	if opt.Top == 0 {
		opt.Top = 5
	}
	switch {
	case !(opt.Speed > 0) || math.IsInf(opt.Speed, 0):
		return fmt.Errorf("speed %v: want a positive factor", opt.Speed)
	case opt.Horizon < 0:
		return fmt.Errorf("horizon %v: want a duration of 0 or more", opt.Horizon)
	case opt.OrderBuffer < 1:
		return fmt.Errorf("order buffer %d: want at least 1 line", opt.OrderBuffer)
	case opt.Routing < Even || opt.Routing > StickyClient:
		return errors.New("no routing given")
	case opt.Gateways < 1 || opt.Gateways > design.MaxGateways:
		return fmt.Errorf("gateways %d: want 1 to %d", opt.Gateways, design.MaxGateways)
	case opt.LimitOf == nil && (opt.Limit.Requests < 1 || opt.Limit.Window <= 0):
		return fmt.Errorf("limit %d per %v: want at least 1 request per a positive window", opt.Limit.Requests, opt.Limit.Window)
	case opt.Top < 0:
		return fmt.Errorf("top %d: want 0 or more", opt.Top)
	case opt.Parallel != nil && opt.Workers < 1:
		return fmt.Errorf("workers %d: a parallel run wants at least 1", opt.Workers)
	}
	for _, d := range opt.Designs {
		info, err := catalog.Lookup(d)
		if err != nil {
			return err
		}
		if info.FixedWindow && opt.WindowKind != window.Fixed {
			return fmt.Errorf("design %s counts in fixed windows only: replay with a fixed window", d)
		}
	}
	return nil
}

// Run replays the log r reads.
func Run(r *accesslog.Reader, opt Options) (Report, error) {
	if err := opt.validate(); err != nil {
		return Report{}, err
	}
	e := newEngine(opt)
	var err error
	if opt.Horizon > 0 {
		err = e.stream(r)
	} else {
		err = e.ordered(r)
	}
	if err != nil {
		return Report{}, err
	}
	if err := e.finish(); err != nil {
		return Report{}, err
	}
	e.rep.Lines = r.Lines()
	e.rep.Bad, e.rep.BadLines = r.Bad()
	return e.rep, nil
}

// stream replays the lines as r reads them, within the horizon.
func (e *engine) stream(r *accesslog.Reader) error {
	return e.read(r, func(p pendingLine) error { return e.line(p) })
}

// ordered reads the whole log into time order, then replays it.
func (e *engine) ordered(r *accesslog.Reader) error {
	o := newOrderer(e.opt.OrderBuffer, e.opt.Runs)
	defer o.close()
	if err := e.read(r, o.add); err != nil {
		return err
	}
	e.rep.Reordered, e.rep.Disorder, e.rep.Runs = o.behind, time.Duration(o.disorder), len(o.runs)
	if len(o.runs) > 0 {
		e.rep.Runs++ // the lines still held go out as one more
	}
	total, done := r.Lines(), 0
	return o.each(func(p pendingLine) error {
		if done++; e.opt.Replaying != nil && done%65536 == 0 {
			e.opt.Replaying(done, total)
		}
		return e.line(p)
	})
}

// read hands every line r reads to fn, as it comes.
func (e *engine) read(r *accesslog.Reader, fn func(pendingLine) error) error {
	var l accesslog.Line
	for {
		err := r.Next(&l)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(pendingLine{t: l.Time, key: l.Key, gw: l.Gateway, client: l.Client, cost: l.Cost, n: l.Number}); err != nil {
			return err
		}
		if e.opt.Progress != nil && r.Lines()%65536 == 0 {
			e.opt.Progress(r.Lines())
		}
	}
}

// engine is a replay in progress.
type engine struct {
	opt     Options
	rep     Report
	pending pending // lines within the horizon, by time
	last    int64   // the time of the last line passed on
	maxSeen int64
	keys    map[string]*keyState
	seen    map[string]bool // keys ever seen, for Report.Keys
	gws     map[string]int  // the log's gateway names, by index
	rng     *rand.Rand
	cum     []float64 // uneven routing's cumulative weights
	first   int64     // the log's first time, for Speed
	started bool
	sweepAt int64 // the next time idle keys are run
	top     map[string]*topKeys
	segs    *segments // the segments being run
}

func newEngine(opt Options) *engine {
	e := &engine{opt: opt, keys: map[string]*keyState{}, seen: map[string]bool{}, gws: map[string]int{},
		rng: rand.New(rand.NewPCG(opt.Seed, 0x5eed)), top: map[string]*topKeys{}}
	e.rep.Designs = append([]string{Exact}, without(opt.Designs, Exact)...)
	e.rep.Figures = map[string]Figures{}
	e.rep.Affected = map[string][]Affected{}
	e.rep.Gateways = opt.Gateways
	e.segs = newSegments(e)
	w := 0.0
	for i := range opt.Gateways {
		w += 1 / float64(i+1)
		e.cum = append(e.cum, w)
	}
	return e
}

// line takes one line of the log, its time the log's: into the horizon's
// heap, and out of it those now more than Horizon behind the latest.
func (e *engine) line(p pendingLine) error {
	if !e.started {
		e.first, e.started = p.t, true
	}
	t := e.first + int64(float64(p.t-e.first)/e.opt.Speed) + int64(e.opt.Shift)
	if e.rep.Requests > 0 && t < e.last {
		e.rep.Late++
		if len(e.rep.LateLines) < accesslog.ShownBad {
			e.rep.LateLines = append(e.rep.LateLines, p.n)
		}
		return nil
	}
	p.t = t
	e.pending.push(p)
	e.maxSeen = max(e.maxSeen, t)
	for e.pending.len() > 0 && e.pending.front().t < e.maxSeen-int64(e.opt.Horizon) {
		if err := e.pass(e.pending.pop()); err != nil {
			return err
		}
	}
	return nil
}

// finish passes on what the heap holds and runs every key left.
func (e *engine) finish() error {
	for e.pending.len() > 0 {
		if err := e.pass(e.pending.pop()); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.keys)) {
		if err := e.run(k, e.keys[k]); err != nil {
			return err
		}
	}
	if err := e.segs.flush(); err != nil {
		return err
	}
	e.keys = map[string]*keyState{}
	e.rep.Keys = len(e.seen)
	for d, tk := range e.top {
		e.rep.Affected[d] = tk.sorted()
	}
	return nil
}
