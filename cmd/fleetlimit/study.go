package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetlimit/fleetlimit/study"
)

func newStudyCmd() *cobra.Command {
	var (
		out, reportDir, filter string
		quick                  bool
		workers                int
	)
	c := &cobra.Command{
		Use:   "study",
		Short: "Run the whole study and write results, plots and a report",
		Long: `study runs every design of the study through its scenarios: honest traffic
(steady and page loads, even and uneven routing), floods, a busy key, and a
fixed window beside the sliding one, for K in {2,4,8,16,32} gateways and
Δ in {0.1,0.3,1,3,10} s; then the parts past the study: "beyond" (floods
aimed at chosen gateways, pulsed and sudden floods, a slow or lossy store,
restarts, a fleet that changes size), "counters" (windows in counters
against the exact log), "limits" (a burst limit of 5 a second beside
the minute's, on one key), "peers" (other systems' algorithms) and "fleet"
(the quiet key and every flood on 64 and 128 gateways, beside the
lower bound on round trips (docs/study.md)). It writes DIR/results.csv (one row per run),
DIR/summary.json, PNG plots and DIR/report.md.

Runs go in parallel on all cores, the dearest first; runs that see the same
requests (every design and sync interval of a traffic, K and seed) go
together and draw them once; central-log, which never syncs, runs once
for every K and Δ, and split, whose syncs only push, once for every Δ.
The results do not depend on the number of workers. The whole grid
takes about 2.2 minutes on 2 cores (permit, whose gateways all sync every
Δ, and the fleet part half of it) and about 350 MB of memory: unless GOGC is
set, the study collects garbage at GOGC=400 (docs/performance.md).
Ctrl-C stops cleanly and keeps what finished.`,
		Example: `  fleetlimit study --out study-out
  fleetlimit study --quick --out /tmp/first-look
  fleetlimit study --out k8 --filter "k=8 design=shared-counter,lease"
  fleetlimit study --report study-out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkWorkers(workers); err != nil {
				return err
			}
			stdout := cmd.OutOrStdout()
			if reportDir != "" {
				if out != "" || quick || filter != "" {
					return usagef("--report rebuilds a report from DIR/results.csv: it takes no --out, --quick or --filter")
				}
				n, err := study.Rebuild(reportDir)
				if err != nil {
					return runError{err}
				}
				fmt.Fprintf(stdout, "report rebuilt from %d runs: %s\n", n, filepath.Join(reportDir, "report.md"))
				return nil
			}
			if out == "" {
				return usagef("--out DIR is required (or --report DIR to rebuild a report)")
			}
			runs, err := selectRuns(quick, filter)
			if err != nil {
				return err
			}
			return runStudy(cmd, runs, out, workers)
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "directory to write results.csv, summary.json, plots and report.md into")
	f.StringVar(&reportDir, "report", "", "rebuild the report from DIR/results.csv without running")
	f.BoolVar(&quick, "quick", false, "a reduced grid that runs in seconds")
	f.StringVar(&filter, "filter", "", `select runs, e.g. "design=lease,split k=8 sync=1s traffic=flood" (keys: part design k sync traffic routing kind limit seed)`)
	f.IntVar(&workers, "workers", 0, "parallel runs (0: one per core)")
	return c
}

// studyGCPercent is the study's garbage collection target, unless GOGC
// says otherwise (docs/performance.md).
const studyGCPercent = 400

// selectRuns returns the grid (or the quick one) less what filter leaves out.
func selectRuns(quick bool, filter string) ([]study.Run, error) {
	runs := study.Grid()
	if quick {
		runs = study.Quick()
	}
	if filter == "" {
		return runs, nil
	}
	f, err := study.ParseFilter(filter)
	if err != nil {
		return nil, usageError{err}
	}
	if runs = f.Select(runs); len(runs) == 0 {
		return nil, usagef("filter %q selects no run", filter)
	}
	return runs, nil
}

// runStudy runs runs with progress, writes their results into out, and says
// what it did.
func runStudy(cmd *cobra.Command, runs []study.Run, out string, workers int) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return runError{err}
	}
	var requests float64
	for _, r := range runs {
		requests += study.ExpectedRequests(r.Params)
	}
	fmt.Fprintf(stdout, "%d runs, about %.3g simulated requests, into %s\n", len(runs), requests, out)
	if os.Getenv("GOGC") == "" {
		// every run builds its state afresh: collecting a quarter as
		// often takes about 4% of the study's CPU, for twice the memory
		debug.SetGCPercent(studyGCPercent)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	bar := newProgress(stderr, len(runs), "study")
	start := time.Now()
	rows, complete, err := study.Execute(ctx, runs, study.Options{Workers: workers, Progress: bar.done})
	bar.finish()
	if err != nil {
		return runError{err}
	}
	wall := time.Since(start)
	var simulated int64
	for _, r := range rows {
		simulated += r.Requests
	}
	if err := study.Write(out, rows); err != nil {
		return runError{err}
	}
	fmt.Fprintf(stdout, "%d runs, %d simulated requests in %s (%.3g requests/s)\n", len(rows), simulated,
		wall.Round(10*time.Millisecond), float64(simulated)/wall.Seconds())
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(out, "report.md"))
	if !complete {
		return runError{fmt.Errorf("interrupted: %d of %d runs finished; their results are in %s", len(rows), len(runs), out)}
	}
	return nil
}
