package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/study"
)

// adviseFlags are advise's flags: the question, and how to print.
type adviseFlags struct {
	q                                        study.Question
	gateways, syncs, honest, routing, threat string
	asJSON                                   bool
	workers, top                             int
	log                                      adviseLog
	routingSet                               bool // --routing was given
}

func newAdviseCmd() *cobra.Command {
	af := adviseFlags{q: study.Question{Limit: 100, Window: time.Minute, Seeds: 2,
		Budgets: study.Budgets{OverX: 1.1, RejectPct: 1, RoundTrips: 10, StoreCalls: 10}}}
	c := &cobra.Command{
		Use:   "advise",
		Short: "Rank the designs and sync intervals for your fleet, traffic, threat and budgets",
		Long: `advise turns the study into a decision. Given the fleet (K, or several K
that the choice must hold for), the limit, the honest traffic you expect, the
flood you must hold against and the budgets you accept, it simulates every
design the simulator knows at every candidate Δ (an honest run of 60 windows
and a flood run of 20, --seeds each, for every K) and prints them ranked:
first those within every budget, the cheapest first (each figure as a share
of its budget, summed; then the longer Δ), then the rest by how far they miss.
With several K a candidate's figures are its worst over them.

The figures: worst_window_x is the most admitted in any window under the
flood, × L; rejected_pct and round_trip_pct are of the honest traffic;
store/s is the store's load under the honest traffic, the fleet's syncs and
round trips per key per second, held to --max-store-calls. A threat aimed at
some gateways (flood:M@N) is the easy case for the designs that share by
syncing: spread_x is the same flood spread over every gateway, so that a
recommendation made for the first says what the second would do.

With --log, the traffic is your own: the access log is replayed (as
fleetlimit replay does) at every K and Δ, every design beside the exact
limit, and the candidates are ranked on it: worst_window_x is the log's
worst key's, rejected_pct the requests the exact limit would have admitted,
round_trip_pct and store/s as above.`,
		Example: `  fleetlimit advise --gateways 8 --honest steady:0.8 --threat flood:100
  fleetlimit advise --gateways 4,16,32 --threat flood:1000@1 --max-over 1.05 --max-rejected 0.5 --max-round-trips 5
  fleetlimit advise --gateways 8 --rtt 10ms --sync-loss 0.05 --json
  fleetlimit advise --log access.log.gz --format combined --key ip --gateways 8,16 --limit 100 --window 1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := af.parse(cmd.Flags().Changed); err != nil {
				return err
			}
			if af.log.path != "" {
				return af.log.run(cmd.OutOrStdout(), &af)
			}
			return af.run(cmd.OutOrStdout())
		},
	}
	af.register(c.Flags())
	return c
}

// parse reads the flags that need parsing into af.q and checks the question.
func (af *adviseFlags) parse(changed func(string) bool) error {
	if err := checkWorkers(af.workers); err != nil {
		return err
	}
	q := &af.q
	var err error
	if q.Gateways, err = parseInts(af.gateways); err != nil {
		return usagef("--gateways %q: %v", af.gateways, err)
	}
	if q.Syncs, err = parseDurations(af.syncs); err != nil {
		return usagef("--sync %q: %v", af.syncs, err)
	}
	if err := af.log.check(changed); err != nil {
		return err
	}
	af.routingSet = changed("routing")
	if af.log.path != "" {
		return af.checkLogQuestion()
	}
	if q.Honest, err = sim.ParseTraffic(af.honest); err != nil {
		return usageError{err}
	}
	if q.Threat, err = sim.ParseTraffic(af.threat); err != nil {
		return usageError{err}
	}
	if q.Routing, err = sim.ParseRouting(af.routing); err != nil {
		return usageError{err}
	}
	if af.top < 0 {
		return usagef("--top %d: must be 0 (all) or more", af.top)
	}
	if err := q.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// checkLogQuestion checks what advise --log takes of the question: the
// fleet, the limit and the budgets (the log is the traffic).
func (af *adviseFlags) checkLogQuestion() error {
	q := af.q
	if af.top < 0 {
		return usagef("--top %d: must be 0 (all) or more", af.top)
	}
	q.Honest, q.Threat, q.Routing = sim.Traffic{Kind: sim.Steady, Factor: 1}, sim.Traffic{Kind: sim.Flood, Factor: 2}, sim.Even
	if err := q.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// run simulates the candidates and prints them ranked.
func (af *adviseFlags) run(w io.Writer) error {
	start := time.Now()
	cands, err := study.Advise(context.Background(), af.q, af.workers)
	if err != nil {
		return runError{err}
	}
	return af.print(w, cands, func(cs []study.Candidate) { writeAdvice(w, af.q, cs, time.Since(start)) })
}

// print keeps the first --top candidates and prints them as JSON with
// --json, else by text.
func (af *adviseFlags) print(w io.Writer, cands []study.Candidate, text func([]study.Candidate)) error {
	if af.top > 0 && af.top < len(cands) {
		cands = cands[:af.top]
	}
	if af.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(cands)
	}
	text(cands)
	return nil
}

// register defines advise's flags on f.
func (af *adviseFlags) register(f *pflag.FlagSet) {
	q := &af.q
	f.StringVar(&af.gateways, "gateways", "8", "K, or several joined by commas that the choice must hold for")
	f.StringVar(&af.syncs, "sync", "100ms,300ms,1s,3s,10s", "candidate sync intervals Δ, joined by commas")
	f.IntVar(&q.Limit, "limit", q.Limit, "L, requests allowed per window")
	f.DurationVar(&q.Window, "window", q.Window, "W, the window")
	f.StringVar(&af.honest, "honest", "steady:0.8", "the honest traffic you expect: steady:F or pageload:F")
	f.StringVar(&af.routing, "routing", "uneven", "how the honest traffic reaches the gateways: even or uneven (with --log also sticky-key, sticky-client, or log with --gateway-field)")
	f.StringVar(&af.threat, "threat", "flood:100", "the flood to hold against: flood:M, optionally @N to aim it at N gateways")
	f.DurationVar(&q.Faults.RTT, "rtt", 0, "the store's round trip (0: instant)")
	f.Float64Var(&q.Faults.Loss, "sync-loss", 0, "probability that a sync's push, and again its pull, is lost")
	f.Float64Var(&q.Budgets.OverX, "max-over", q.Budgets.OverX, "the most admitted in any window under the flood you accept, × L")
	f.Float64Var(&q.Budgets.RejectPct, "max-rejected", q.Budgets.RejectPct, "the honest requests you accept to reject, percent")
	f.Float64Var(&q.Budgets.RoundTrips, "max-round-trips", q.Budgets.RoundTrips, "the honest requests you accept to wait on the store, percent")
	f.Float64Var(&q.Budgets.StoreCalls, "max-store-calls", q.Budgets.StoreCalls, "the store calls (syncs and round trips) per key per second you accept under the honest traffic")
	f.IntVar(&q.Seeds, "seeds", q.Seeds, "seeds per run (1 to 20)")
	f.IntVar(&af.top, "top", 0, "print only the first N (0: all)")
	f.BoolVar(&af.asJSON, "json", false, "print the ranked candidates as JSON")
	f.IntVar(&af.workers, "workers", 0, "parallel runs (0: one per core)")
	af.log.register(f)
}

func writeAdvice(w io.Writer, q study.Question, cands []study.Candidate, took time.Duration) {
	fmt.Fprintf(w, "fleetlimit advise: K = %s, L = %d per %v, honest %v (%v), threat %v", joinInts(q.Gateways), q.Limit, q.Window, q.Honest, q.Routing, q.Threat)
	if s := q.Faults.String(); s != "" {
		fmt.Fprintf(w, ", store %s", s)
	}
	fmt.Fprintf(w, "\nbudgets: worst window ≤ %.3g × L, honest rejections ≤ %.3g%%, round trips ≤ %.3g%%, store calls ≤ %.3g per key per second (%d seeds, %v)\n",
		q.Budgets.OverX, q.Budgets.RejectPct, q.Budgets.RoundTrips, q.Budgets.StoreCalls, q.Seeds, took.Round(10*time.Millisecond))
	fmt.Fprintf(w, "threat assumed: %v; spread_x is the worst window of the same flood spread over every gateway\n\n", q.Threat)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tdesign\tΔ\tfits\tworst_window_x\tadmitted_x\tspread_x\trejected_pct\tround_trip_pct\tstore/s\tscore\t")
	for i, c := range cands {
		fits := "no"
		if c.Fits {
			fits = "yes"
		}
		sync := c.SyncText
		if sync == "" {
			sync = "–"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f\t%.3g\t%.2f\t\n", i+1, c.Design, sync, fits, c.WorstWindowX, c.AdmittedX,
			c.SpreadWorstWindowX, c.RejectedPct, c.RoundTripPct, c.StoreCallsPerSec, c.Score)
	}
	tw.Flush()
	if len(cands) > 0 {
		at := " at Δ = " + cands[0].SyncText
		if cands[0].SyncText == "" {
			at = ""
		}
		fmt.Fprintf(w, "\n%s%s is first: %s.\n", cands[0].Design, at, cands[0].Why)
		fmt.Fprintf(w, "It was chosen against %v; the same flood spread over every gateway would make its worst window %.3f × L.\n",
			q.Threat, cands[0].SpreadWorstWindowX)
		if !cands[0].Fits {
			fmt.Fprintln(w, "No candidate meets every budget: loosen one, or accept the first's figures.")
		}
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a whole number of at least 1", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive duration such as 1s or 300ms", f)
		}
		out = append(out, d)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
