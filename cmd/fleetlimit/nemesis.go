package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetlimit/fleetlimit/internal/workers"
	"github.com/fleetlimit/fleetlimit/sim/nemesis"
)

// maxNemesisSeeds bounds --seeds: a million cases is about an hour here.
const maxNemesisSeeds = 1_000_000

type nemesisFlags struct {
	seed    uint64
	seeds   int
	designs string
	workers int
	asJSON  bool
}

func newNemesisCmd() *cobra.Command {
	var nf nemesisFlags
	c := &cobra.Command{
		Use:   "nemesis",
		Short: "Run the live designs through random faults in the simulator and check every bound",
		Long: `nemesis draws, for each seed, a design, a fleet, a traffic and a schedule of
faults (store outages, lost and slow syncs with varying round trips, a store
that forgets everything, gateways that restart without their state, skewed
clocks), runs it in the simulator, and checks the run's whole history: no
window may hold more admits than the design's bound plus what the faults
it meets add (docs/nemesis.md tables both). A case is a function of its
seed, so a failing seed fails again anywhere; each failure is shrunk to the
fewest faults that still break a bound and printed with the command that
checks it again. It exits 1 when any case fails.`,
		Example: `  fleetlimit nemesis --seeds 5000
  fleetlimit nemesis --designs permit,headroom --seeds 20000
  fleetlimit nemesis --seed 12801 --seeds 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return nf.run(cmd.OutOrStdout(), cmd.ErrOrStderr()) },
	}
	f := c.Flags()
	f.Uint64Var(&nf.seed, "seed", 1, "first seed")
	f.IntVar(&nf.seeds, "seeds", 1000, "number of seeds: checks seeds S..S+N-1")
	f.StringVar(&nf.designs, "designs", "", "comma-separated designs to draw from (default every live design)")
	f.IntVar(&nf.workers, "workers", 0, "parallel runs (0: one per core)")
	f.BoolVar(&nf.asJSON, "json", false, "print one JSON object")
	return c
}

// options checks the flags and makes the sweep's options.
func (nf nemesisFlags) options() (nemesis.Options, error) {
	o := nemesis.Options{Seed: nf.seed, Seeds: nf.seeds, Workers: nf.workers}
	if nf.seeds < 1 || nf.seeds > maxNemesisSeeds {
		return o, usagef("--seeds %d: want 1 to %d", nf.seeds, maxNemesisSeeds)
	}
	if err := checkWorkers(nf.workers); err != nil {
		return o, err
	}
	if nf.designs != "" {
		live := nemesis.Designs()
		for _, d := range strings.Split(nf.designs, ",") {
			d = strings.TrimSpace(d)
			if !slices.Contains(live, d) {
				return o, usagef("--designs: %q is not a live design; want some of %s", d, strings.Join(live, ", "))
			}
			o.Designs = append(o.Designs, d)
		}
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	o.Parallel = workers.Pool(o.Workers)
	return o, nil
}

func (nf nemesisFlags) run(stdout, stderr io.Writer) error {
	o, err := nf.options()
	if err != nil {
		return err
	}
	bar := newProgress(stderr, nf.seeds, "nemesis")
	o.Progress = func(done int) { bar.done(done, float64(done)/float64(nf.seeds)) }
	start := time.Now()
	rep, err := nemesis.Sweep(o)
	bar.finish()
	if err != nil {
		return err
	}
	took := time.Since(start)
	if nf.asJSON {
		err = writeNemesisJSON(stdout, rep, took)
	} else {
		writeNemesis(stdout, rep, took)
	}
	if err == nil && len(rep.Failures) > 0 {
		return runError{fmt.Errorf("%d of %d cases broke a bound", len(rep.Failures), nf.seeds)}
	}
	return err
}

// writeNemesis prints the sweep's table and each failure.
func writeNemesis(w io.Writer, rep nemesis.Report, took time.Duration) {
	bad := map[string]int{}
	for _, f := range rep.Failures {
		bad[f.Params.Design]++
	}
	total := 0
	fmt.Fprintf(w, "%-16s %8s %10s\n", "design", "cases", "violations")
	for _, d := range nemesis.Designs() {
		if n := rep.Runs[d]; n > 0 {
			fmt.Fprintf(w, "%-16s %8d %10d\n", d, n, bad[d])
			total += n
		}
	}
	fmt.Fprintf(w, "%d cases (%d requests decided) in %v: %.0f cases a second; %d violations\n",
		total, rep.Requests, took.Round(time.Millisecond), float64(total)/took.Seconds(), len(rep.Failures))
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "\nseed %d, %s: %v\n  the case:         fleetlimit sim %s\n  fewest faults:    fleetlimit sim %s\n  check it again:   %s\n",
			f.Seed, f.Params.Design, f.Violation, f.Params, f.Minimal, f.Command())
	}
}

// writeNemesisJSON prints the sweep as one JSON object.
func writeNemesisJSON(w io.Writer, rep nemesis.Report, took time.Duration) error {
	type failure struct {
		Seed      uint64 `json:"seed"`
		Design    string `json:"design"`
		Violation string `json:"violation"`
		Case      string `json:"case"`
		Minimal   string `json:"minimal"`
		Command   string `json:"command"`
	}
	out := struct {
		Cases       map[string]int `json:"cases"`
		Requests    int64          `json:"requests"`
		Seconds     float64        `json:"seconds"`
		Violations  int            `json:"violations"`
		Failures    []failure      `json:"failures"`
		CasesPerSec float64        `json:"cases_per_second"`
	}{Cases: rep.Runs, Requests: rep.Requests, Seconds: took.Seconds(), Violations: len(rep.Failures), Failures: []failure{}}
	n := 0
	for _, c := range rep.Runs {
		n += c
	}
	out.CasesPerSec = float64(n) / took.Seconds()
	for _, f := range rep.Failures {
		out.Failures = append(out.Failures, failure{f.Seed, f.Params.Design, f.Violation.String(), f.Params.String(), f.Minimal.String(), f.Command()})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
