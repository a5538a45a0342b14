package study

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/sweep"
	"github.com/fleetlimit/fleetlimit/window"
)

// Row is one finished run: its part and its result (which holds its
// Params), without store counts, which the study does not report.
type Row struct {
	Part string
	sim.Result
}

// Options tune Execute.
type Options struct {
	Workers int // 0: one per core
	// Progress is called after each finished run with the runs finished
	// and the share of the expected work they make (runs' costs differ a
	// thousandfold, so an estimate of the time left must use the share).
	Progress func(done int, work float64)
}

// Execute runs the given runs in parallel and returns the finished ones in
// the order given. When ctx is cancelled it returns what finished, and
// complete is false.
func Execute(ctx context.Context, runs []Run, opt Options) (rows []Row, complete bool, err error) {
	order := costOrder(runs)
	params := make([]sim.Params, len(runs))
	for j, i := range order {
		params[j] = runs[i].Params
	}
	sopt := sweep.Options{Workers: opt.Workers, NoStoreCounts: true} // the study reports none
	if opt.Progress != nil {
		twins := sweep.Twins(params, sopt)
		costs, total := make([]float64, len(params)), 0.0
		for j, p := range params {
			if twins[j] < 0 { // a run that takes another's result costs nothing
				costs[j] = runCost(p)
			}
			total += costs[j]
		}
		finished := 0.0
		sopt.Progress = func(done, j int) {
			finished += costs[j]
			opt.Progress(done, finished/total)
		}
	}
	out := sweep.Run(ctx, params, sopt)
	byRun := make([]sweep.Outcome, len(runs))
	for j, i := range order {
		byRun[i] = out[j]
	}
	complete = true
	for i, o := range byRun {
		switch {
		case o.Err != nil:
			return nil, false, fmt.Errorf("run %v: %w", runs[i].Params, o.Err)
		case !o.Done:
			complete = false
		default:
			rows = append(rows, Row{Part: runs[i].Part, Result: o.Result})
		}
	}
	return rows, complete, nil
}

var header = []string{"part", "design", "gateways", "sync", "limit", "window", "window_kind", "traffic", "routing",
	"duration", "aligned_sync", "seed", "requests", "admitted", "rejected", "round_trips", "syncs",
	"admitted_x", "worst_window_x", "worst_fixed_window_x", "rejected_pct", "round_trip_pct", "stranded_x",
	"faults", "attack_window_x", "first_rejected_before_pct", "first_rejected_after_pct",
	"also_limits", "also_admitted_x", "also_worst_window_x"}

func ff(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// WriteCSV writes rows as results.csv: a header, then one row per run.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, r := range rows {
		p := r.Params
		rec := []string{r.Part, p.Design, strconv.Itoa(p.Gateways), p.Sync.String(), strconv.Itoa(p.Limit),
			p.Window.String(), p.Spec().String(), p.MixString(), p.Routing.String(), p.Duration.String(),
			strconv.FormatBool(p.AlignedSync), strconv.FormatUint(p.Seed, 10),
			strconv.FormatInt(r.Requests, 10), strconv.FormatInt(r.Admitted, 10), strconv.FormatInt(r.Rejected, 10),
			strconv.FormatInt(r.RoundTrips, 10), strconv.FormatInt(r.Syncs, 10),
			ff(r.AdmittedX), ff(r.WorstWindowX), ff(r.WorstFixedWindowX), ff(r.RejectedPct), ff(r.RoundTripPct), ff(r.StrandedX),
			p.Faults.String(), ff(r.AttackWindowX), ff(r.FirstBeforePct), ff(r.FirstAfterPct)}
		rec = append(rec, alsoColumns(r.Result)...)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// studyColumns are the columns of results written before the beyond part
// (no faults, one traffic), and beyondColumns before the limits part (one
// limit per key), which ReadCSV still reads.
const (
	studyColumns  = 23
	beyondColumns = 27
)

// alsoColumns are a run's further limits (sim.Params.Limits, ";" between
// them) and its figures against each.
func alsoColumns(r sim.Result) []string {
	var lims, adm, worst []string
	for i, l := range r.Params.Limits {
		lims = append(lims, l.String())
		adm = append(adm, ff(r.Limits[i].AdmittedX))
		worst = append(worst, ff(r.Limits[i].WorstWindowX))
	}
	return []string{strings.Join(lims, ";"), strings.Join(adm, ";"), strings.Join(worst, ";")}
}

// parseAlso reads alsoColumns into r.
func parseAlso(r *Row, rec []string) error {
	if rec[0] == "" {
		return nil
	}
	lims, adm, worst := strings.Split(rec[0], ";"), strings.Split(rec[1], ";"), strings.Split(rec[2], ";")
	if len(adm) != len(lims) || len(worst) != len(lims) {
		return fmt.Errorf("also_limits %q: %d limits, %d admitted_x, %d worst_window_x", rec[0], len(lims), len(adm), len(worst))
	}
	for i, s := range lims {
		l, err := sim.ParseLimit(s)
		if err != nil {
			return err
		}
		a, err1 := strconv.ParseFloat(adm[i], 64)
		w, err2 := strconv.ParseFloat(worst[i], 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("also figures %q, %q: not numbers", adm[i], worst[i])
		}
		r.Params.Limits = append(r.Params.Limits, l)
		r.Limits = append(r.Limits, sim.LimitResult{Limit: l.String(), AdmittedX: a, WorstWindowX: w})
	}
	return nil
}

// ReadCSV reads what WriteCSV wrote, or the shorter results.csv of earlier
// versions. name is used in error messages.
func ReadCSV(r io.Reader, name string) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(head) != len(header) && len(head) != beyondColumns && len(head) != studyColumns {
		return nil, fmt.Errorf("%s: %d columns, want %d: not a fleetlimit results file", name, len(head), len(header))
	}
	cr.FieldsPerRecord = len(head)
	for i, h := range header[:len(head)] {
		if head[i] != h {
			return nil, fmt.Errorf("%s: column %d is %q, want %q: not a fleetlimit results file", name, i+1, head[i], h)
		}
	}
	var rows []Row
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		row, err := parseRow(rec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		rows = append(rows, row)
	}
}

func parseRow(rec []string) (Row, error) {
	var (
		r    Row
		errs []error
	)
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		errs = append(errs, err)
		return n
	}
	i64 := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		errs = append(errs, err)
		return n
	}
	f64 := func(s string) float64 {
		x, err := strconv.ParseFloat(s, 64)
		errs = append(errs, err)
		return x
	}
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		errs = append(errs, err)
		return d
	}
	p := &r.Params
	r.Part, p.Design, p.Gateways, p.Sync, p.Limit, p.Window = rec[0], rec[1], atoi(rec[2]), dur(rec[3]), atoi(rec[4]), dur(rec[5])
	var err error
	p.WindowKind, p.WindowBuckets, err = window.ParseCounting(rec[6])
	errs = append(errs, err)
	mix, err := sim.ParseMix(rec[7])
	errs = append(errs, err)
	if err == nil {
		p.Traffic, p.Also = mix[0], mix[1:]
	}
	p.Routing, err = sim.ParseRouting(rec[8])
	errs = append(errs, err)
	p.Duration = dur(rec[9])
	p.AlignedSync, err = strconv.ParseBool(rec[10])
	errs = append(errs, err)
	p.Seed, err = strconv.ParseUint(rec[11], 10, 64)
	errs = append(errs, err)
	r.Requests, r.Admitted, r.Rejected, r.RoundTrips, r.Syncs = i64(rec[12]), i64(rec[13]), i64(rec[14]), i64(rec[15]), i64(rec[16])
	r.AdmittedX, r.WorstWindowX, r.WorstFixedWindowX = f64(rec[17]), f64(rec[18]), f64(rec[19])
	r.RejectedPct, r.RoundTripPct, r.StrandedX = f64(rec[20]), f64(rec[21]), f64(rec[22])
	if len(rec) > studyColumns {
		p.Faults, err = sim.ParseFaults(rec[23])
		errs = append(errs, err)
		r.AttackWindowX, r.FirstBeforePct, r.FirstAfterPct = f64(rec[24]), f64(rec[25]), f64(rec[26])
	}
	if len(rec) > beyondColumns {
		errs = append(errs, parseAlso(&r, rec[beyondColumns:]))
	}
	for _, e := range errs {
		if e != nil {
			return Row{}, e
		}
	}
	if err := p.Validate(); err != nil {
		return Row{}, err
	}
	if !slices.Contains(Parts, r.Part) {
		return Row{}, fmt.Errorf("part %q: want %s", r.Part, partsWanted())
	}
	return r, nil
}
