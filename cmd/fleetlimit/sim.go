package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sweep"
	"github.com/fleetlimit/fleetlimit/window"
)

func newSimCmd() *cobra.Command {
	d := sim.Defaults()
	var (
		traffic, routing, kind string
		seeds                  int
		asJSON                 bool
		workers                int
	)
	c := &cobra.Command{
		Use:   "sim",
		Short: "Simulate one design for one key across K gateways",
		Long: `sim runs one scenario of the study: K gateways of one design share a limit of
L requests per window W for one key, syncing with the embedded store every Δ,
under honest or flood traffic. A run is fully determined by its flags and seed.

Designs: ` + fmt.Sprint(design.Names()) + `
Traffic: steady:F (honest Poisson at F x L/W), pageload:F (bursts of 10 over 1s),
         flood:M (attacker at M x L/W)`,
		Example: `  fleetlimit sim --design shared-counter --gateways 8 --sync 1s --traffic flood:100 --duration 20m
  fleetlimit sim --design lease --gateways 32 --traffic steady:0.8 --routing uneven --seeds 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if d.Traffic, err = sim.ParseTraffic(traffic); err != nil {
				return usageError{err}
			}
			if d.Routing, err = sim.ParseRouting(routing); err != nil {
				return usageError{err}
			}
			if d.WindowKind, err = window.ParseKind(kind); err != nil {
				return usageError{err}
			}
			if seeds < 1 || seeds > 100000 {
				return usagef("seeds %d: must be between 1 and 100000", seeds)
			}
			if err := d.Validate(); err != nil {
				return usageError{err}
			}
			params := make([]sim.Params, seeds)
			for i := range params {
				params[i] = d
				params[i].Seed = d.Seed + uint64(i)
			}
			out := sweep.Run(context.Background(), params, sweep.Options{Workers: workers})
			results := make([]sim.Result, len(out))
			for i, o := range out {
				if o.Err != nil {
					return runError{o.Err}
				}
				results[i] = o.Result
			}
			if asJSON {
				return writeSimJSON(cmd.OutOrStdout(), d, results)
			}
			writeSimText(cmd.OutOrStdout(), d, results)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&d.Design, "design", d.Design, "coordination design")
	f.IntVar(&d.Gateways, "gateways", d.Gateways, "K, the number of gateways")
	f.DurationVar(&d.Sync, "sync", d.Sync, "Δ, each gateway's sync interval")
	f.IntVar(&d.Limit, "limit", d.Limit, "L, requests allowed per window")
	f.DurationVar(&d.Window, "window", d.Window, "W, the window length")
	f.StringVar(&traffic, "traffic", d.Traffic.String(), "steady:F, pageload:F or flood:M")
	f.StringVar(&routing, "routing", "even", "even or uneven (gateway i with probability ∝ 1/i)")
	f.DurationVar(&d.Duration, "duration", d.Duration, "simulated time of one run (longer than the window)")
	f.Uint64Var(&d.Seed, "seed", d.Seed, "first seed")
	f.IntVar(&seeds, "seeds", 1, "number of seeds: runs seeds S..S+N-1 in parallel")
	f.StringVar(&kind, "window-kind", "sliding", "sliding or fixed")
	f.BoolVar(&d.AlignedSync, "aligned-sync", false, "all gateways sync at the same instants (multiples of Δ)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.IntVar(&workers, "workers", 0, "parallel runs (0: one per core)")
	return c
}

// simRun is one seed's figures in JSON.
type simRun struct {
	Seed              uint64  `json:"seed"`
	Requests          int64   `json:"requests"`
	Admitted          int64   `json:"admitted"`
	Rejected          int64   `json:"rejected"`
	RoundTrips        int64   `json:"round_trips"`
	Syncs             int64   `json:"syncs"`
	AdmittedX         float64 `json:"admitted_x"`
	WorstWindowX      float64 `json:"worst_window_x"`
	WorstFixedWindowX float64 `json:"worst_fixed_window_x"`
	RejectedPct       float64 `json:"rejected_pct"`
	RoundTripPct      float64 `json:"round_trip_pct"`
	StrandedX         float64 `json:"stranded_x"`
}

func toSimRun(r sim.Result) simRun {
	return simRun{r.Params.Seed, r.Requests, r.Admitted, r.Rejected, r.RoundTrips, r.Syncs,
		r.AdmittedX, r.WorstWindowX, r.WorstFixedWindowX, r.RejectedPct, r.RoundTripPct, r.StrandedX}
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
		Traffic           string   `json:"traffic"`
		Routing           string   `json:"routing"`
		Duration          string   `json:"duration"`
		AlignedSync       bool     `json:"aligned_sync"`
		Seed              uint64   `json:"seed"`
		Seeds             int      `json:"seeds"`
		AdmittedX         float64  `json:"admitted_x"`
		WorstWindowX      float64  `json:"worst_window_x"`
		WorstFixedWindowX float64  `json:"worst_fixed_window_x"`
		RejectedPct       float64  `json:"rejected_pct"`
		RoundTripPct      float64  `json:"round_trip_pct"`
		StrandedX         float64  `json:"stranded_x"`
		Runs              []simRun `json:"runs"`
	}{p.Design, p.Gateways, p.Sync.String(), p.Limit, p.Window.String(), p.WindowKind.String(),
		p.Traffic.String(), p.Routing.String(), p.Duration.String(), p.AlignedSync, p.Seed, len(results),
		m.AdmittedX, m.WorstWindowX, m.WorstFixedWindowX, m.RejectedPct, m.RoundTripPct, m.StrandedX, runs}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return runError{err}
	}
	return nil
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
}
