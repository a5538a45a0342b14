package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/sweep"
	"github.com/fleetlimit/fleetlimit/window"
)

// simFlags are sim's flags: the run's parameters, and how to run and print
// it.
type simFlags struct {
	d                      sim.Params
	traffic, routing, kind string
	restarts, members      string
	outages, forgets       string
	seeds, workers, keys   int
	asJSON                 bool
	keyDist                string
	timeline               string
	timelineUntil          time.Duration
	alsoLimits             []string
}

func newSimCmd() *cobra.Command {
	sf := simFlags{d: sim.Defaults()}
	c := &cobra.Command{
		Use:   "sim",
		Short: "Simulate one design for one key across K gateways",
		Long: `sim runs one scenario of the study: K gateways of one design share a limit of
L requests per window W for one key, syncing with the embedded store every Δ,
under honest or flood traffic. A run is fully determined by its flags and seed.

Designs: ` + fmt.Sprint(catalog.Names()) + `
Traffic: steady:F (honest Poisson at F x L/W), pageload:F (bursts of 10 over 1s),
         flood:M (attacker at M x L/W); each optionally followed by
         @N    sent to N of the K gateways only (chosen from the seed): an
               attacker who picks its gateways
         +T    starting at time T (a sudden flood)
         ~ON/OFF  pulsed: on for ON, off for OFF, repeating
         and several joined by commas arrive together on the key, e.g.
         steady:0.8,flood:100@1+10m. With several traffics or a late flood,
         sim also reports each traffic's rejections before and after the
         flood starts, and the worst window that holds its start.

A store that is not ideal (all off by default, which is the study's model):
  --rtt D [--rtt-p99 D]  store round trips take D (or are drawn log-normal with
                         median D and 99th percentile given); a decision that
                         waits on the store is made when the answer arrives,
                         and a gateway waits for one round trip at a time
  --sync-loss P          each push and each pull is lost with probability P;
                         the gateway retries at its next sync
  --clock-skew D         each gateway's clock is off by up to ±D
  --restart T:G,...      gateway G (or "all") loses its unsynced state at T
  --outage T+D,...       the store answers nothing from T for D: each gateway
                         falls back (from the count it last heard) until a
                         sync succeeds, as serve does; fallbacks are counted
  --forget T,...         the store loses everything it holds at T (a Redis
                         restarted without persistence): the gateways find it
                         at their next contact and push their admits again

Many keys: --keys N [--key-dist uniform|zipf:S] runs N keys through the
fleet at once (the traffic is each key's on average) and reports, beside the
accuracy figures, what the store carries: key syncs and gateway batches per
second, round trips per second, stamps and bytes pushed and pulled, and the
entries held.`,
		Example: `  fleetlimit sim --design shared-counter --gateways 8 --sync 1s --traffic flood:100 --duration 20m
  fleetlimit sim --design lease --gateways 32 --traffic steady:0.8 --routing uneven --seeds 5 --json
  fleetlimit sim --design extrapolate --traffic steady:0.8,flood:100@1+20m --duration 40m
  fleetlimit sim --design shared-counter --traffic flood:100 --duration 20m --rtt 10ms --sync-loss 0.1
  fleetlimit sim --design central-log --gateways 8 --traffic steady:0.8 --duration 20m --outage 10m+1m --forget 15m
  fleetlimit sim --design headroom --keys 1000 --key-dist zipf:1.1 --traffic steady:0.5 --duration 10m
  fleetlimit sim --design headroom --traffic flood:100 --also-limit 5/1s --duration 20m
  fleetlimit sim --design permit --gateways 8 --traffic flood:100 --timeline run.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.parse(cmd.Flags().Changed); err != nil {
				return err
			}
			return sf.run(cmd.OutOrStdout(), cmd.Flags().Changed)
		},
	}
	sf.register(c.Flags())
	return c
}

// parse reads the flags that need parsing into sf.d and checks them all;
// changed reports whether a flag was given.
func (sf *simFlags) parse(changed func(string) bool) error {
	if err := checkWorkers(sf.workers); err != nil {
		return err
	}
	d := &sf.d
	mix, err := sim.ParseMix(sf.traffic)
	if err != nil {
		return usageError{err}
	}
	d.Traffic, d.Also = mix[0], mix[1:]
	if d.Routing, err = sim.ParseRouting(sf.routing); err != nil {
		return usageError{err}
	}
	var buckets int
	if d.WindowKind, buckets, err = window.ParseCounting(sf.kind); err != nil {
		return usageError{err}
	}
	if buckets > 0 {
		if changed("window-buckets") && d.WindowBuckets != buckets {
			return usagef("--window-kind %s and --window-buckets %d disagree: give the counters once", sf.kind, d.WindowBuckets)
		}
		d.WindowBuckets = buckets
	}
	if err := sf.parseFaults(); err != nil {
		return usageError{err}
	}
	d.Limits = nil
	for _, s := range sf.alsoLimits {
		l, err := sim.ParseLimit(s)
		if err != nil {
			return usageError{err}
		}
		d.Limits = append(d.Limits, l)
	}
	if sf.seeds < 1 || sf.seeds > 100000 {
		return usagef("seeds %d: must be between 1 and 100000", sf.seeds)
	}
	if err := d.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// parseFaults reads the faults' flags.
func (sf *simFlags) parseFaults() (err error) {
	f := &sf.d.Faults
	if f.Members, err = sim.ParseMembers(sf.members); err != nil {
		return err
	}
	if f.Restarts, err = sim.ParseRestarts(sf.restarts); err != nil {
		return err
	}
	if f.Outages, err = sim.ParseOutages(sf.outages); err != nil {
		return err
	}
	f.Forgets, err = sim.ParseForgets(sf.forgets)
	return err
}

// run runs what the flags ask for (many keys, a timeline, or seeds of one
// key) and prints it.
func (sf *simFlags) run(w io.Writer, changed func(string) bool) error {
	d := sf.d
	if changed("keys") || changed("key-dist") {
		dist, err := sim.ParseKeyDist(sf.keyDist)
		if err != nil {
			return usageError{err}
		}
		if err := sim.ValidateKeys(d, sf.keys); err != nil {
			return usageError{err}
		}
		return simKeys(w, d, sf.seeds, sf.keys, dist, sf.workers, sf.asJSON)
	}
	if changed("timeline") || changed("timeline-until") {
		return simTimeline(w, d, sf.seeds, sf.timeline, sf.timelineUntil, sf.asJSON)
	}
	params := make([]sim.Params, sf.seeds)
	for i := range params {
		params[i] = d
		params[i].Seed = d.Seed + uint64(i)
	}
	out := sweep.Run(context.Background(), params, sweep.Options{Workers: sf.workers})
	results := make([]sim.Result, len(out))
	for i, o := range out {
		if o.Err != nil {
			return runError{o.Err}
		}
		results[i] = o.Result
	}
	if sf.asJSON {
		return writeSimJSON(w, d, results)
	}
	writeSimText(w, d, results)
	return nil
}

// register defines sim's flags on f.
func (sf *simFlags) register(f *pflag.FlagSet) {
	d := &sf.d
	f.StringVar(&d.Design, "design", d.Design, "coordination design")
	f.IntVar(&d.Gateways, "gateways", d.Gateways, "K, the number of gateways")
	f.DurationVar(&d.Sync, "sync", d.Sync, "Δ, each gateway's sync interval")
	f.IntVar(&d.Limit, "limit", d.Limit, "L, requests allowed per window")
	f.StringArrayVar(&sf.alsoLimits, "also-limit", nil, "a further limit on the key, N/WINDOW (e.g. 5/1s, repeatable): a request is admitted only if every limit admits it, and the figures against each are printed too (no faults)")
	f.DurationVar(&d.Window, "window", d.Window, "W, the window length")
	f.StringVar(&d.LeasePolicy, "lease-policy", "first-come", "lease designs: how the store sizes grants at a sync: first-come (the study's) or max-min (Doorman's max-min fair shares of the room over the gateways' asks)")
	f.StringVar(&sf.traffic, "traffic", d.Traffic.String(), "steady:F, pageload:F or flood:M, each with optional @N, +T, ~ON/OFF, several joined by commas (see above)")
	f.StringVar(&sf.routing, "routing", "even", "even or uneven (gateway i with probability ∝ 1/i)")
	f.DurationVar(&d.Duration, "duration", d.Duration, "simulated time of one run (longer than the window)")
	f.Uint64Var(&d.Seed, "seed", d.Seed, "first seed")
	f.IntVar(&sf.seeds, "seeds", 1, "number of seeds: runs seeds S..S+N-1 in parallel")
	f.StringVar(&sf.kind, "window-kind", "sliding", "sliding or fixed, or with its counters as the study's results name it: sliding/60 (= --window-buckets 60)")
	f.IntVar(&d.WindowBuckets, "window-buckets", 0, "count each window in B counters of W/B (a fixed window: 1) instead of the exact log of admits; a bucket counts until its whole span has left the window (0: the exact log)")
	f.BoolVar(&d.AlignedSync, "aligned-sync", false, "all gateways sync at the same instants (multiples of Δ)")
	f.DurationVar(&d.Faults.RTT, "rtt", 0, "median store round trip (0: instant)")
	f.DurationVar(&d.Faults.RTTP99, "rtt-p99", 0, "99th percentile of the store round trip (log-normal; 0: every round trip takes --rtt)")
	f.Float64Var(&d.Faults.Loss, "sync-loss", 0, "probability that a sync's push, and again its pull, is lost")
	f.DurationVar(&d.Faults.Skew, "clock-skew", 0, "each gateway's clock is off by an amount drawn from [-D, D]")
	f.StringVar(&sf.restarts, "restart", "", "T:G,... gateway G (or all) loses its unsynced state at time T")
	f.StringVar(&sf.members, "members", "", "T:K,... the fleet becomes K gateways at time T: newcomers join, or the highest indexes crash; the others learn at their membership heartbeats")
	f.StringVar(&sf.outages, "outage", "", "T+D,... the store answers nothing from time T for D; the gateways fall back")
	f.StringVar(&sf.forgets, "forget", "", "T,... the store loses everything it holds at time T; the gateways re-seed it")
	f.DurationVar(&d.Faults.MemberTTL, "member-ttl", 0, "the membership's lease: heartbeats every third of it, a crashed member forgotten after it (0: 10s, serve's default)")
	f.StringVar(&sf.timeline, "timeline", "", "a bucket width (1s): print the run's timeline in buckets of it, each gateway's admits, the rejections and the fleet's admits in the window ending there, against L; or FILE.svg or FILE.png: draw the run (admits in the window against L, each gateway's view, syncs and round trips, the flood's start) into it (one seed)")
	f.DurationVar(&sf.timelineUntil, "timeline-until", 0, "with --timeline, how much of the run to show (default three windows)")
	f.BoolVar(&sf.asJSON, "json", false, "print one JSON object")
	f.IntVar(&sf.workers, "workers", 0, "parallel runs (0: one per core)")
	f.IntVar(&sf.keys, "keys", 1, "N keys through the fleet at once: --traffic is each key's on average, spread by --key-dist; reports what the store carries")
	f.StringVar(&sf.keyDist, "key-dist", "uniform", "how requests pick their key: uniform or zipf:S (key i with probability ∝ 1/i^S)")
}

// simRun is one seed's figures in JSON.
type simRun struct {
	Seed              uint64  `json:"seed"`
	Requests          int64   `json:"requests"`
	Admitted          int64   `json:"admitted"`
	Rejected          int64   `json:"rejected"`
	RoundTrips        int64   `json:"round_trips"`
	Fallbacks         int64   `json:"fallbacks,omitempty"`
	Syncs             int64   `json:"syncs"`
	AdmittedX         float64 `json:"admitted_x"`
	WorstWindowX      float64 `json:"worst_window_x"`
	WorstFixedWindowX float64 `json:"worst_fixed_window_x"`
	RejectedPct       float64 `json:"rejected_pct"`
	RoundTripPct      float64 `json:"round_trip_pct"`
	StrandedX         float64 `json:"stranded_x"`
	// with several traffics or a late flood
	AttackStart   string       `json:"attack_start,omitempty"`
	AttackWindowX float64      `json:"attack_window_x,omitempty"`
	Parts         []simRunPart `json:"parts,omitempty"`
	// against each --also-limit
	Limits []simRunLimit `json:"also_limits,omitempty"`
}

// simRunLimit is a run's figures against one further limit.
type simRunLimit struct {
	Limit        string  `json:"limit"`
	Admitted     int64   `json:"admitted"`
	AdmittedX    float64 `json:"admitted_x"`
	WorstWindowX float64 `json:"worst_window_x"`
}

// simRunPart is one traffic's counts in a run.
type simRunPart struct {
	Traffic        string `json:"traffic"`
	RequestsBefore int64  `json:"requests_before"`
	RejectedBefore int64  `json:"rejected_before"`
	RequestsAfter  int64  `json:"requests_after"`
	RejectedAfter  int64  `json:"rejected_after"`
}

func toSimRun(r sim.Result) simRun {
	run := simRun{Seed: r.Params.Seed, Requests: r.Requests, Admitted: r.Admitted, Rejected: r.Rejected, RoundTrips: r.RoundTrips,
		Fallbacks: r.Fallbacks, Syncs: r.Syncs, AdmittedX: r.AdmittedX, WorstWindowX: r.WorstWindowX, WorstFixedWindowX: r.WorstFixedWindowX,
		RejectedPct: r.RejectedPct, RoundTripPct: r.RoundTripPct, StrandedX: r.StrandedX, AttackWindowX: r.AttackWindowX}
	if r.AttackStart > 0 {
		run.AttackStart = r.AttackStart.String()
	}
	for _, pt := range r.Parts {
		run.Parts = append(run.Parts, simRunPart{pt.Traffic, pt.Before.Requests, pt.Before.Rejected, pt.During.Requests, pt.During.Rejected})
	}
	for _, l := range r.Limits {
		run.Limits = append(run.Limits, simRunLimit{l.Limit, l.Admitted, l.AdmittedX, l.WorstWindowX})
	}
	return run
}

func writeSimJSON(w io.Writer, p sim.Params, results []sim.Result) error {
	m := sim.Mean(results)
	runs := make([]simRun, len(results))
	for i, r := range results {
		runs[i] = toSimRun(r)
	}
	doc := struct {
		Design            string   `json:"design"`
		Gateways          int      `json:"gateways"`
		Sync              string   `json:"sync"`
		Limit             int      `json:"limit"`
		Window            string   `json:"window"`
		WindowKind        string   `json:"window_kind"`
		WindowBuckets     int      `json:"window_buckets,omitempty"`
		Traffic           string   `json:"traffic"`
		Routing           string   `json:"routing"`
		Duration          string   `json:"duration"`
		AlignedSync       bool     `json:"aligned_sync"`
		LeasePolicy       string   `json:"lease_policy,omitempty"`
		RTT               string   `json:"rtt,omitempty"`
		RTTP99            string   `json:"rtt_p99,omitempty"`
		SyncLoss          float64  `json:"sync_loss,omitempty"`
		ClockSkew         string   `json:"clock_skew,omitempty"`
		Restarts          string   `json:"restarts,omitempty"`
		Members           string   `json:"members,omitempty"`
		Outages           string   `json:"outages,omitempty"`
		Forgets           string   `json:"forgets,omitempty"`
		Seed              uint64   `json:"seed"`
		Seeds             int      `json:"seeds"`
		AdmittedX         float64  `json:"admitted_x"`
		WorstWindowX      float64  `json:"worst_window_x"`
		WorstFixedWindowX float64  `json:"worst_fixed_window_x"`
		RejectedPct       float64  `json:"rejected_pct"`
		RoundTripPct      float64  `json:"round_trip_pct"`
		StrandedX         float64  `json:"stranded_x"`
		Runs              []simRun `json:"runs"`
	}{p.Design, p.Gateways, p.Sync.String(), p.Limit, p.Window.String(), p.WindowKind.String(), p.WindowBuckets,
		p.MixString(), p.Routing.String(), p.Duration.String(), p.AlignedSync, leasePolicy(p),
		durText(p.Faults.RTT), durText(p.Faults.RTTP99), p.Faults.Loss, durText(p.Faults.Skew), sim.RestartsString(p.Faults.Restarts), sim.MembersString(p.Faults.Members),
		sim.OutagesString(p.Faults.Outages), sim.ForgetsString(p.Faults.Forgets), p.Seed, len(results),
		m.AdmittedX, m.WorstWindowX, m.WorstFixedWindowX, m.RejectedPct, m.RoundTripPct, m.StrandedX, runs}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return runError{err}
	}
	return nil
}

// durText is d as a duration, or "" for 0.
func durText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// leasePolicy is the run's lease policy when it is not the study's.
func leasePolicy(p sim.Params) string {
	if p.LeasePolicy == sim.MaxMin {
		return p.LeasePolicy
	}
	return ""
}

func writeSimText(w io.Writer, p sim.Params, results []sim.Result) {
	fmt.Fprintf(w, "fleetlimit sim %s\n", p)
	fmt.Fprintf(w, "%d gateway(s) share %d requests per %v for one key; syncs every %v (%s)\n\n",
		p.Gateways, p.Limit, p.Window, p.Sync, map[bool]string{true: "aligned", false: "random phase"}[p.AlignedSync])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seed\trequests\tadmitted\trejected\tround trips\tsyncs\tadmitted_x\tworst_window_x\trejected_pct\tround_trip_pct\tstranded_x\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.2f\t%.3f\t\n", r.Params.Seed, r.Requests, r.Admitted,
			r.Rejected, r.RoundTrips, r.Syncs, r.AdmittedX, r.WorstWindowX, r.RejectedPct, r.RoundTripPct, r.StrandedX)
	}
	if len(results) > 1 {
		m := sim.Mean(results)
		fmt.Fprintf(tw, "mean\t\t\t\t\t\t%.3f\t%.3f\t%.3f\t%.2f\t%.3f\t\n", m.AdmittedX, m.WorstWindowX, m.RejectedPct, m.RoundTripPct, m.StrandedX)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nadmitted_x: admitted per window after the first, over L; worst_window_x: most admitted in any W-long interval, over L")
	if len(p.Faults.Outages) > 0 {
		var fell, reqs int64
		for _, r := range results {
			fell += r.Fallbacks
			reqs += r.Requests
		}
		fmt.Fprintf(w, "the fallback decided %d of %d requests (%.2f%%) while the store was down\n", fell, reqs, 100*float64(fell)/float64(max(reqs, 1)))
	}
	writeParts(w, results)
	writeLimits(w, results)
}

// writeLimits prints each run's figures against each further limit, when
// it has some.
func writeLimits(w io.Writer, results []sim.Result) {
	if len(results) == 0 || len(results[0].Limits) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seed\talso limit\tadmitted\tadmitted_x\tworst_window_x\t")
	for _, r := range results {
		for _, l := range r.Limits {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%.3f\t%.3f\t\n", r.Params.Seed, l.Limit, l.Admitted, l.AdmittedX, l.WorstWindowX)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "a request is admitted only if every limit admits it; each limit's figures are over its own requests per window")
}

// writeParts prints each traffic's rejections before and after the attack,
// and the worst window that holds its start, when the run has them.
func writeParts(w io.Writer, results []sim.Result) {
	if len(results) == 0 || results[0].Parts == nil {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seed\ttraffic\trequests before\trejected_pct before\trequests after\trejected_pct after\t")
	for _, r := range results {
		for _, pt := range r.Parts {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\t\n", r.Params.Seed, pt.Traffic, pt.Before.Requests, pctText(pt.Before),
				pt.During.Requests, pctText(pt.During))
		}
	}
	tw.Flush()
	if a := results[0].AttackStart; a > 0 {
		fmt.Fprintf(w, "\nthe flood starts at %v; the worst window that holds its start, over L (attack_window_x):", a)
		for _, r := range results {
			fmt.Fprintf(w, " %.3f", r.AttackWindowX)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "\nno traffic starts late: \"after\" is the whole run")
	}
}

func pctText(c sim.Counts) string {
	if c.Requests == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", c.RejectedPct())
}
