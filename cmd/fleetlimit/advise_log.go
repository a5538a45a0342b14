package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/fleetlimit/fleetlimit/accesslog"
	"github.com/fleetlimit/fleetlimit/replay"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/study"
	"github.com/fleetlimit/fleetlimit/window"
)

// adviseLog is advise --log: the candidates ranked on a replayed access log
// instead of the study's synthetic traffic.
type adviseLog struct {
	path, format, key, timeField, gateway string
}

func (al *adviseLog) register(f *pflag.FlagSet) {
	f.StringVar(&al.path, "log", "", "rank on this access log instead of --honest and --threat (see fleetlimit replay; its format in --format)")
	f.StringVar(&al.format, "format", "", "with --log: "+accesslog.FormatNames+"; default: detected from its first lines")
	f.StringVar(&al.key, "key", "", "with --log: what a line's key is (fleetlimit replay --help)")
	f.StringVar(&al.timeField, "time-field", "", "with --log, json: the time field (default: the first of "+strings.Join(accesslog.TimeFields, ", ")+" the log has)")
	f.StringVar(&al.gateway, "gateway-field", "", "with --log: the field naming each line's gateway; routes by it")
}

// check refuses the flags that mean nothing with a log, and the log's own
// without one.
func (al *adviseLog) check(changed func(string) bool) error {
	if al.path == "" {
		for _, f := range []string{"format", "key", "time-field", "gateway-field"} {
			if changed(f) {
				return usagef("--%s reads a log: give --log", f)
			}
		}
		return nil
	}
	for _, f := range []string{"honest", "threat", "rtt", "sync-loss", "seeds"} {
		if changed(f) {
			return usagef("--%s has no meaning with --log: the log is the traffic, replayed on an ideal store", f)
		}
	}
	return nil
}

// options are the reader's and the replay's options for K gateways at Δ.
func (al *adviseLog) options(af *adviseFlags, k int, sync time.Duration) (accesslog.Options, replay.Options, error) {
	rf := replayFlags{format: al.format, key: al.key, timeField: al.timeField, gateway: al.gateway, routing: af.routing,
		gateways: k, sync: sync, limit: af.q.Limit, window: af.q.Window, kind: window.Sliding.String(), speed: 1,
		seed: 1, top: 0}
	if al.gateway != "" && !af.routingSet {
		rf.routing = "log"
	}
	lo, ro, err := rf.options()
	ro.Designs = study.BeyondDesigns()
	return lo, ro, err
}

// run replays the log at every K and Δ, in parallel, and ranks the
// candidates.
func (al *adviseLog) run(w io.Writer, af *adviseFlags) error {
	if _, _, err := al.options(af, af.q.Gateways[0], af.q.Syncs[0]); err != nil {
		return err
	}
	type pass struct {
		k    int
		sync time.Duration
		rep  replay.Report
		err  error
	}
	var passes []*pass
	for _, k := range af.q.Gateways {
		for _, s := range af.q.Syncs {
			passes = append(passes, &pass{k: k, sync: s})
		}
	}
	workers := af.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for _, p := range passes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			p.rep, p.err = al.replayOnce(af, p.k, p.sync)
		})
	}
	wg.Wait()
	byCand := map[string]*study.Candidate{}
	var order []string
	for _, p := range passes {
		if p.err != nil {
			return runError{fmt.Errorf("%s: %w", al.path, p.err)}
		}
		for _, d := range p.rep.Designs {
			addLogCandidate(byCand, &order, d, p.sync, p.rep)
		}
	}
	cands := make([]study.Candidate, 0, len(order))
	for _, id := range order {
		cands = append(cands, *byCand[id])
	}
	return af.print(w, study.Rank(cands, af.q.Budgets), func(cs []study.Candidate) {
		writeLogAdvice(w, af, al, passes[0].rep, cs, time.Since(start))
	})
}

// replayOnce replays the log once, for K gateways at Δ.
func (al *adviseLog) replayOnce(af *adviseFlags, k int, sync time.Duration) (replay.Report, error) {
	lo, ro, err := al.options(af, k, sync)
	if err != nil {
		return replay.Report{}, err
	}
	r, _, closeFn, err := accesslog.Open(al.path, lo)
	if err != nil {
		return replay.Report{}, err
	}
	defer closeFn()
	return replay.Run(r, ro)
}

// addLogCandidate takes design d's figures at Δ from a replay into its
// candidate, keeping the worst over K. A design that never syncs is one
// candidate whatever Δ.
func addLogCandidate(by map[string]*study.Candidate, order *[]string, d string, sync time.Duration, rep replay.Report) {
	info, _ := catalog.Lookup(d)
	id, text := d+"@"+sync.String(), sync.String()
	if info.NoSync {
		id, text = d, ""
	}
	f, exact := rep.Figures[d], rep.Figures[replay.Exact]
	c := study.Candidate{Design: d, Sync: sync, SyncText: text, WorstWindowX: f.WorstWindowX,
		RejectedPct: pct(f.FalseRefus, f.Requests), RoundTripPct: pct(f.RoundTrips, f.Requests)}
	if exact.Admitted > 0 {
		c.AdmittedX = float64(f.Admitted) / float64(exact.Admitted)
	}
	if rep.Keys > 0 {
		c.StoreCallsPerSec = rep.PerSec(f.RoundTrips+f.KeySyncs) / float64(rep.Keys)
	}
	c.SpreadWorstWindowX = c.WorstWindowX
	old, ok := by[id]
	if !ok {
		by[id] = &c
		*order = append(*order, id)
		return
	}
	old.WorstWindowX = max(old.WorstWindowX, c.WorstWindowX)
	old.SpreadWorstWindowX = old.WorstWindowX
	old.AdmittedX = max(old.AdmittedX, c.AdmittedX)
	old.RejectedPct = max(old.RejectedPct, c.RejectedPct)
	old.RoundTripPct = max(old.RoundTripPct, c.RoundTripPct)
	old.StoreCallsPerSec = max(old.StoreCallsPerSec, c.StoreCallsPerSec)
}

func writeLogAdvice(w io.Writer, af *adviseFlags, al *adviseLog, rep replay.Report, cands []study.Candidate, took time.Duration) {
	q := af.q
	fmt.Fprintf(w, "fleetlimit advise on %s: %d requests of %d keys over %v; K = %s, L = %d per %v\n", al.path, rep.Requests, rep.Keys,
		rep.Duration().Round(time.Second), joinInts(q.Gateways), q.Limit, q.Window)
	fmt.Fprintf(w, "budgets: worst window ≤ %.3g × L, false rejections ≤ %.3g%%, round trips ≤ %.3g%%, store calls ≤ %.3g per key per second (%v)\n",
		q.Budgets.OverX, q.Budgets.RejectPct, q.Budgets.RoundTrips, q.Budgets.StoreCalls, took.Round(10*time.Millisecond))
	fmt.Fprintln(w, "on the log: worst_window_x is its worst key's; admitted_x the admits over the exact limit's; rejected_pct the requests the exact limit would have admitted")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tdesign\tΔ\tfits\tworst_window_x\tadmitted_x\trejected_pct\tround_trip_pct\tstore/s\tscore\t")
	for i, c := range cands {
		fits, sync := "no", c.SyncText
		if c.Fits {
			fits = "yes"
		}
		if sync == "" {
			sync = "–"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.3f\t%.4f\t%.3f\t%.2f\t%.3g\t%.2f\t\n", i+1, c.Design, sync, fits, c.WorstWindowX, c.AdmittedX,
			c.RejectedPct, c.RoundTripPct, c.StoreCallsPerSec, c.Score)
	}
	tw.Flush()
	if len(cands) > 0 {
		fmt.Fprintf(w, "\n%s is first: %s.\n", cands[0].Design, cands[0].Why)
		if !cands[0].Fits {
			fmt.Fprintln(w, "No candidate meets every budget: loosen one, or accept the first's figures.")
		}
	}
}
